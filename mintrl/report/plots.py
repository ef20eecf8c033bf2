"""Figures of the summary: Pass@1 with intervals, training reward, per-method training curves.

Each row (method) keeps one colour in every figure; files only (Agg backend).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from mintrl.io import atomic_path  # noqa: E402
from mintrl.report.colours import row_colours  # noqa: E402
from mintrl.report.stats import benchmark_order  # noqa: E402

NEAR_ZERO = 3.0  # Pass@1 (%) under which a bar gets its value written on it

# Rows whose colours are close (the two MInTRL anchors) also differ in line style.
STYLES = {"mintrl-proxy": "--", "corrections-only": ":", "teacher": "-."}

# (metric key in iterations.csv, panel title, y label); "share" panels are drawn on [0, 1]
CURVES = [("rollout/reward", "training reward (MInTRL: corrected rollouts included)",
           "mean reward"),
          ("coverage/semi", "coverage, semi-on-policy pool", "prompts with ≥1 correct (share)"),
          ("coverage/control", "coverage, control pool", "prompts with ≥1 correct (share)"),
          ("intervention/offpolicy_token_frac", "off-policy tokens", "share of semi tokens"),
          ("intervention/rate", "intervention rate", "share of semi rollouts"),
          ("rollout/response_len", "response length", "tokens")]


def plot_pass1(stats: pd.DataFrame, rows: list[str], out: Path) -> None:
    """Grouped bars: Pass@1 (%) per benchmark and row, with the bootstrap 95 % interval.
    ``stats``: the long Pass@1 table of mintrl.report.tables.seed_table."""
    benches = benchmark_order(stats["benchmark"].unique())
    rows = [r for r in rows if r in set(stats["row"])]
    colours = row_colours(rows)
    width = 0.8 / max(1, len(rows))
    fig, ax = plt.subplots(figsize=(max(6.0, 0.35 * len(rows) * len(benches) + 2), 4))
    cell = stats.set_index(["row", "benchmark"])
    for k, r in enumerate(rows):
        xs, ys, lo, hi = [], [], [], []
        for j, b in enumerate(benches):
            if (r, b) in cell.index:
                c = cell.loc[(r, b)]
                xs.append(j + (k - (len(rows) - 1) / 2) * width)
                ys.append(c["mean"])
                lo.append(c["mean"] - c["lo"])
                hi.append(c["hi"] - c["mean"])
        bars = ax.bar(xs, ys, width, yerr=[lo, hi], capsize=2, color=colours[r], label=r)
        # a bar near zero is invisible: its value says it is there (hard splits)
        ax.bar_label(bars, labels=[f"{y:.1f}" if y < NEAR_ZERO else "" for y in ys],
                     fontsize=6, padding=1, rotation=90)
    ax.set_xticks(range(len(benches)), benches)
    ax.set(ylabel="Pass@1 (%)", title="Pass@1 per benchmark (bars: bootstrap 95 % interval)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    _save(fig, out)


def plot_rewards(iters: pd.DataFrame, rows: dict[str, str], out: Path) -> None:
    """Training reward against iteration per task; a row's seeds are averaged."""
    _plot_panels(iters, rows, CURVES[:1], out)


def plot_curves(iters: pd.DataFrame, rows: dict[str, str], out: Path) -> None:
    """One panel per (task, metric of CURVES): reward, coverage of the semi and control pools,
    off-policy token share, intervention rate, response length, against iteration."""
    _plot_panels(iters, rows, CURVES, out)


def _plot_panels(iters: pd.DataFrame, row_of: dict[str, str], curves, out: Path) -> None:
    """Panels wrap at three per line, each task's block under the previous one; one legend
    for the figure (every row has one colour and style everywhere)."""
    from matplotlib.ticker import MaxNLocator

    tasks = sorted(iters["task"].unique()) if len(iters) else []
    cols = min(3, len(curves))
    per_task = -(-len(curves) // cols)
    fig, axes = plt.subplots(max(1, len(tasks)) * per_task, cols, squeeze=False,
                             figsize=(4.6 * cols, 3.3 * max(1, len(tasks)) * per_task))
    handles: dict[str, object] = {}
    if len(iters):
        iters = iters.assign(row=iters["run"].map(lambda r: row_of.get(r, r)))
        colours = row_colours(list(dict.fromkeys(iters["row"])))
    for i, task in enumerate(tasks):
        part = iters[iters["task"] == task]
        for j, (key, title, ylabel) in enumerate(curves):
            ax = axes[i * per_task + j // cols][j % cols]
            if key in part:
                for row, df in part.groupby("row", sort=False):
                    mean = df.groupby("iteration")[key].mean().dropna()
                    if len(mean):
                        (line,) = ax.plot(mean.index, mean.values, color=colours[row],
                                          linestyle=STYLES.get(row, "-"), label=row,
                                          zorder=3 if row in STYLES else 2)  # dashed on top
                        handles.setdefault(row, line)
            ax.set_title(f"{task}: {title}", fontsize=9)
            ax.set(xlabel="iteration", ylabel=ylabel)
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            if "share" in ylabel:
                ax.set_ylim(-0.02, 1.02)
            if not ax.lines:
                ax.text(0.5, 0.5, "not logged by these runs", ha="center", va="center",
                        transform=ax.transAxes, color="#777777")
        for j in range(len(curves), per_task * cols):  # unused cells of the task's block
            axes[i * per_task + j // cols][j % cols].set_axis_off()
    if handles:
        # as many columns as the figure is wide, so a one-panel figure wraps its legend
        ncol = max(1, min(len(handles), int(fig.get_figwidth() // 1.5)))
        lines = -(-len(handles) // ncol)
        fig.legend(list(handles.values()), list(handles), loc="upper center",
                   ncol=ncol, fontsize=8, bbox_to_anchor=(0.5, 1.0))
        fig.tight_layout(rect=(0, 0, 1, 1 - (0.12 + 0.2 * lines) / fig.get_figheight()))
    _save(fig, out)


def _save(fig, out: Path) -> None:
    if not fig.legends:
        fig.tight_layout()
    with atomic_path(out) as tmp:  # "tight": a legend beside the axes stays in the image
        fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)


def plot_knobs(stats: pd.DataFrame, knobs: dict[str, dict[str, float]], out: Path) -> None:
    """Pass@1 (%) against each ablated knob: one panel per knob, x its value, one line per
    benchmark, bars the bootstrap 95 % interval. ``knobs``: knob -> {row: value}, each row
    differing from the reference only in that knob (mintrl.report.tables.single_knobs)."""
    panels = [(k, v) for k, v in knobs.items() if len(v) >= 2]
    fig, axes = plt.subplots(1, max(1, len(panels)), squeeze=False,
                             figsize=(4.5 * max(1, len(panels)), 3.5))
    if not panels:
        axes[0][0].text(0.5, 0.5, "no knob varies alone in this table", ha="center")
        axes[0][0].set_axis_off()
    cell = stats.set_index(["row", "benchmark"])
    for ax, (knob, rows) in zip(axes[0], panels, strict=False):
        order = sorted(rows, key=rows.get)
        for bench in benchmark_order(stats["benchmark"].unique()):
            pts = [(rows[r], cell.loc[(r, bench)]) for r in order if (r, bench) in cell.index]
            if not pts:
                continue
            xs = [x for x, _ in pts]
            ys = [c["mean"] for _, c in pts]
            err = [[c["mean"] - c["lo"] for _, c in pts], [c["hi"] - c["mean"] for _, c in pts]]
            ax.errorbar(xs, ys, yerr=err, marker="o", capsize=2, label=bench)
        ax.set(title=f"Pass@1 against {knob}", xlabel=knob, ylabel="Pass@1 (%)")
        ax.legend(fontsize=7)
    _save(fig, out)


# a claim's outcome (mintrl.report.claims) -> its colour in the verdicts figure
OUTCOME_COLOURS = {"reproduced": "#2ca02c", "not reproduced": "#d62728",
                   "inconclusive": "#ff7f0e", "not run": "#7f7f7f"}


def plot_claims(evidence: pd.DataFrame, verdicts: pd.DataFrame, out: Path) -> None:
    """Each claim's paired differences (pp) with their 95 % intervals, one line per
    comparison, grouped by claim and coloured by its outcome; hollow markers are the
    comparisons a claim requires first; the grey band is a ``within`` claim's margin.
    ``evidence``: mintrl.report.claims.comparison_table; ``verdicts``: its ``decide``."""
    ticks, y = [], 0.0  # (y, label) of each comparison's line
    fig, ax = plt.subplots(figsize=(8, 0.32 * (len(evidence) + 2 * len(verdicts)) + 1.2))
    for v in verdicts.itertuples(index=False):
        colour = OUTCOME_COLOURS.get(v.outcome, "#7f7f7f")
        lines = evidence[evidence["claim"] == v.claim]
        ax.text(0.0, y, f"{v.claim}: {v.outcome}", transform=ax.get_yaxis_transform(),
                fontsize=8, fontweight="bold", color=colour, va="center",
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 1})
        compared = []  # the y of each comparison the rule reads (a margin spans them)
        for c in lines.itertuples(index=False):
            y -= 1
            ax.errorbar([c.mean], [y], xerr=[[c.mean - c.lo], [c.hi - c.mean]], fmt="o",
                        capsize=2, color=colour,
                        markerfacecolor=colour if c.role == "compare" else "white")
            ticks.append((y, f"{c.row} − {c.versus} ({c.benchmark})"))
            compared += [y] if c.role == "compare" else []
        if compared and lines["rule"].iloc[0] == "within":
            m = float(lines["margin"].iloc[0])
            ax.fill_betweenx([min(compared) - 0.4, max(compared) + 0.4], -m, m,
                             color="#dddddd", zorder=0)
        y -= 1.5
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_yticks([t for t, _ in ticks], [lab for _, lab in ticks], fontsize=7)
    ax.set_ylim(y + 0.5, 0.8)
    ax.set(xlabel="paired difference, Pass@1 (pp), 95 % interval",
           title="The paper's claims: every comparison that decides them")
    _save(fig, out)
