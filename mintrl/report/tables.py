"""The results tables: rows methods, columns benchmarks (+ average), mean and spread over
(lab seed, RL seed) pairs, paired differences to the base with bootstrap intervals.
``python -m mintrl.summarize`` is its CLI.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

from mintrl.config.runs import Run, split_lab_model
from mintrl.report.stats import benchmark_order, cell_stats

# table metric -> column of the evaluations' samples.parquet
SAMPLE_METRICS = {"pass@1": "reward", "strict": "strict", "step_accuracy": "step_accuracy"}
BASE_ROW = "base"  # the row every difference is taken to
STAT_KEYS = ("mean", "std", "lo", "hi")
DELTA_KEYS = ("delta", "delta_std", "delta_lo", "delta_hi")  # the same, of the difference
MEAN_NOTE = ("Mean ± std over a row's runs, one per (lab seed, RL seed) pair (the base and the "
             "teacher: one per lab seed) [bootstrap 95 % interval over problems and pairs]")
DELTA_NOTE = ("Each run minus the base pre-trained with the same lab seed, on the same problems; "
              "mean ± std over pairs [bootstrap 95 % interval over problems and pairs]; in "
              "bold where the interval lies wholly above 0")
# How far one (lab seed, RL seed) pair moves the embedded default's table, measured over the
# three pairs of `snakemake main_table` (benchmarks/pair_spread.py writes it; paths are the
# workflow's, relative to the repository root where Snakemake runs).
PAIR_SPREAD = Path("benchmarks/results/pair_spread.md")
_SPREAD_LINE = re.compile(r"Largest range over pairs: ([\d.]+) pp \(([^)]+)\).*"
                          r"Median range: ([\d.]+) pp")


def eval_records(paths: list[Path]) -> pd.DataFrame:
    """One row per (run, task, iteration, split) with Pass@1 and the other split metrics."""
    rows = []
    for path in paths:
        m = json.loads(Path(path).read_text())
        for key in ("run", "task", "iteration"):
            if m.get(key) is None:
                raise SystemExit(f"{path}: no {key!r} (evaluate with --run and --iteration)")
        for split, values in m["splits"].items():
            rows.append({"run": m["run"], "task": m["task"], "iteration": m["iteration"],
                         "benchmark": f"{m['task']}/{split}", "source": str(path), **values})
    return pd.DataFrame(rows)


def latest(evals: pd.DataFrame) -> pd.DataFrame:
    """Each (run, task)'s latest evaluated iteration."""
    last = evals.groupby(["run", "task"])["iteration"].transform("max")
    return evals[evals["iteration"] == last]


def rows_and_labs(names, runs: dict[str, Run]) -> tuple[dict[str, str], dict[str, int]]:
    """(row_of, lab_of) for the evaluated ``names``: a config run's row is its entry, a lab
    model's (``base-lab1``) its role; the lab seed each starts from (0 for others)."""
    row_of = {n: r.entry for n, r in runs.items()}
    lab_of = {n: r.lab_seed for n, r in runs.items()}
    for name in names:
        split = split_lab_model(name)
        if name not in runs and split is not None:
            row_of[name], lab_of[name] = split
    return row_of, lab_of


def problem_scores(evals: pd.DataFrame, row_of: dict[str, str],
                   lab_of: dict[str, int] | None = None) -> pd.DataFrame:
    """Per (row, run, benchmark, problem): the mean over samples of each SAMPLE_METRICS
    column, at each run's latest evaluation (read from the ``samples.parquet`` next to its
    ``metrics.json``), and the run's lab seed. ``row_of`` maps a run to its table row (runs
    not in it are their own), ``lab_of`` to its lab seed (default 0)."""
    lab_of = lab_of or {}
    parts = []
    final = latest(evals)[["run", "task", "source"]].drop_duplicates()
    for run, task, source in final.itertuples(index=False):
        path = Path(source).parent / "samples.parquet"
        if not path.exists():
            raise SystemExit(f"{path}: missing (it is written with {source})")
        samples = pd.read_parquet(path, columns=["problem_id", "split",
                                                 *SAMPLE_METRICS.values()])
        cols = list(SAMPLE_METRICS.values())
        samples[cols] = samples[cols].astype(float)  # strict is null where nothing is graded
        per = samples.groupby(["split", "problem_id"])[cols].mean().reset_index()
        per["benchmark"] = task + "/" + per.pop("split")
        per["run"], per["row"], per["lab"] = run, row_of.get(run, run), lab_of.get(run, 0)
        parts.append(per)
    return pd.concat(parts, ignore_index=True)


def trained_benchmarks(scores: pd.DataFrame, trained: set[str]) -> pd.DataFrame:
    """Only the benchmarks the ``trained`` runs were evaluated on (the lab's base and teacher
    are evaluated on every task: an arith-only ablation's table has no intfn columns, and
    its reference rows get an average over the same benchmarks). No trained run: all."""
    mine = scores[scores["run"].isin(trained)]
    return scores[scores["benchmark"].isin(set(mine["benchmark"]))] if len(mine) else scores


def row_matrices(part: pd.DataFrame, column: str, row: str) -> dict[str, pd.DataFrame]:
    """One row's scores in %: benchmark -> (runs × problems), the benchmarks it is graded on."""
    mats = {}
    for bench, b in part.groupby("benchmark"):
        if b[column].isna().all():  # not graded on this benchmark (no reference steps)
            continue
        m = b.pivot(index="run", columns="problem_id", values=column)  # pairs × problems
        if m.isna().any().any():
            raise SystemExit(f"row {row!r}, {bench}: its runs were evaluated on different "
                             "problems")
        mats[bench] = m.astype(float) * 100
    return mats


def paired_differences(mats: dict[str, pd.DataFrame], labs: dict[str, int],
                       base: dict[str, pd.DataFrame], row: str) -> dict[str, pd.DataFrame]:
    """benchmark -> (runs × problems) of each run minus the base of its own lab seed on the
    same problem (``labs``: run -> lab seed; ``base``: benchmark -> (lab seeds × problems)).
    Pairing removes the lab's noise the run shares with its base; a benchmark the base is not
    graded on has none."""
    out = {}
    for bench, m in mats.items():
        if bench not in base:
            continue
        run_labs = [labs[r] for r in m.index]
        missing = sorted(set(run_labs) - set(base[bench].index))
        if missing:
            raise SystemExit(f"row {row!r}, {bench}: no base evaluation of lab seed(s) "
                             f"{missing}; a difference pairs each run with its lab's base")
        if set(m.columns) != set(base[bench].columns):
            raise SystemExit(f"row {row!r}, {bench}: evaluated on other problems than the base")
        b = base[bench].loc[run_labs, m.columns]
        out[bench] = pd.DataFrame(m.to_numpy() - b.to_numpy(), index=m.index, columns=m.columns)
    return out


def _cells(mats: dict[str, pd.DataFrame], benchmarks: list[str]) -> dict[str, list]:
    """benchmark -> the matrices a cell averages: its own; "average": all of them, only when
    the row has every benchmark."""
    cells = {bench: [m.to_numpy(float)] for bench, m in mats.items()}
    if sorted(mats) == benchmarks:
        cells["average"] = [m.to_numpy(float) for m in mats.values()]
    return cells


def seed_table(scores: pd.DataFrame, metric: str, n_boot: int = 1000) -> pd.DataFrame:
    """Long table (row, benchmark, metric, mean, std, lo, hi, seeds, labs, delta, delta_std,
    delta_lo, delta_hi), in %: each row's runs are its (lab seed, RL seed) pairs (``seeds``
    counts them, ``labs`` their lab seeds); ``delta*``, the same statistics of the runs'
    differences to the base paired by lab seed (``paired_differences``; NaN without a base
    row). "average" is the mean over benchmarks, only for rows that have them all."""
    column = SAMPLE_METRICS[metric]
    benchmarks = sorted(scores["benchmark"].unique())
    labs = scores.groupby("run")["lab"].first().to_dict() if "lab" in scores else {}
    base = {}
    if BASE_ROW in set(scores["row"]):
        part = scores[scores["row"] == BASE_ROW]
        base = {bench: m.set_axis([labs.get(r, 0) for r in m.index])
                for bench, m in row_matrices(part, column, BASE_ROW).items()}
    out = []
    for row, part in scores.groupby("row", sort=False):
        mats = row_matrices(part, column, row)
        run_labs = {r: labs.get(r, 0) for m in mats.values() for r in m.index}
        deltas = _cells(paired_differences(mats, run_labs, base, row), benchmarks)
        for bench, ms in _cells(mats, benchmarks).items():
            out.append({"row": row, "benchmark": bench, "metric": metric,
                        **cell_stats(ms, n_boot=n_boot), "labs": len(set(run_labs.values())),
                        **_delta_stats(deltas.get(bench), n_boot)})
    return pd.DataFrame(out)


VERSUS_ROWS = ("grpo", "opd")  # the baselines every row is also compared with, paired


def versus_table(scores: pd.DataFrame, metric: str, versus: str,
                 n_boot: int = 1000) -> pd.DataFrame:
    """Long table (row, benchmark, metric, mean, std, lo, hi, seeds) of each row minus row
    ``versus``, paired: a run against ``versus``'s run of the same lab seed, problem by problem
    (the same problems and evaluation draws). Rows other than the methods (base, teacher,
    ``versus`` itself) and rows with a lab seed ``versus`` lacks are left out; empty when
    ``versus`` is not in ``scores``."""
    column = SAMPLE_METRICS[metric]
    if versus not in set(scores["row"]):
        return pd.DataFrame()
    benchmarks = sorted(scores["benchmark"].unique())
    labs = scores.groupby("run")["lab"].first().to_dict() if "lab" in scores else {}
    ref = {bench: m.set_axis([labs.get(r, 0) for r in m.index])
           for bench, m in row_matrices(scores[scores["row"] == versus], column, versus).items()}
    if any(m.index.duplicated().any() for m in ref.values()):
        return pd.DataFrame()  # several runs of one lab seed: no pairing
    out = []
    for row, part in scores.groupby("row", sort=False):
        if row in (versus, BASE_ROW, "teacher"):
            continue
        mats = row_matrices(part, column, row)
        run_labs = {r: labs.get(r, 0) for m in mats.values() for r in m.index}
        if not set(run_labs.values()) <= {lab for m in ref.values() for lab in m.index}:
            continue
        for bench, ms in _cells(paired_differences(mats, run_labs, ref, row),
                                benchmarks).items():
            out.append({"row": row, "benchmark": bench, "metric": metric,
                        **cell_stats(ms, n_boot=n_boot)})
    return pd.DataFrame(out)


def _delta_stats(matrices: list | None, n_boot: int) -> dict[str, float]:
    """``cell_stats`` of a cell's paired differences under DELTA_KEYS (NaN: no base)."""
    if matrices is None:
        return dict.fromkeys(DELTA_KEYS, float("nan"))
    st = cell_stats(matrices, n_boot=n_boot)
    return {d: st[k] for d, k in zip(DELTA_KEYS, STAT_KEYS, strict=True)}


def stats_markdown(stats: pd.DataFrame, order: list[str], bold_best: bool = True,
                   note: str = MEAN_NOTE, signed: bool = False) -> str:
    """Cells ``mean ± std [lo, hi]`` (``mean [lo, hi]`` for a row of one pair: n = 1 has no
    spread). In bold: for a table of values, the best mean of each column among the method
    rows (the teacher is a reference, not a contender); for a table of differences
    (``signed``: each mean with its sign), the cells whose interval lies wholly above 0 (a
    "best" difference of -0.3 would read as a gain). Below, ``note`` and how many (lab seed,
    RL seed) pairs each row averages."""
    if stats.empty:
        return "Not graded: these benchmarks have no reference steps to grade against.\n"
    sign = "+" if signed else ""
    wide = stats.pivot(index="row", columns="benchmark", values="mean")
    cols = benchmark_order(wide.columns)
    rows = [r for r in order if r in wide.index] + sorted(set(wide.index) - set(order))
    contenders = [r for r in rows if r != "teacher"]
    best = wide.loc[contenders, cols].max() if contenders else pd.Series(dtype=float)
    cell = stats.set_index(["row", "benchmark"])
    lines = ["| row | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    for r in rows:
        texts = []
        for c in cols:
            if (r, c) not in cell.index:
                texts.append("–")
                continue
            x = cell.loc[(r, c)]
            spread = f" ± {x['std']:.1f}" if x["seeds"] > 1 else ""  # one pair has no spread
            text = f"{x['mean']:{sign}.1f}{spread} [{x['lo']:.1f}, {x['hi']:.1f}]"
            above = x["lo"] > 0 if signed else round(x["mean"], 1) == round(best[c], 1)
            if bold_best and r != "teacher" and above:
                text = f"**{text}**"
            texts.append(text)
        lines.append(f"| {r} | " + " | ".join(texts) + " |")
    pairs = stats.groupby("row")["seeds"].max()
    lines += ["", f"{note}; a row of one pair (n = 1) has no ± std; pairs per row: "
              + ", ".join(f"{r} {int(pairs[r])}" for r in rows) + "."]
    return "\n".join(lines) + "\n"


def delta_markdown(stats: pd.DataFrame, order: list[str]) -> str:
    """``stats_markdown`` of each row's difference to the base, paired by lab seed (in
    percentage points; the base row, all zeros, left out); empty without a base."""
    delta = stats[(stats["row"] != BASE_ROW) & stats["delta"].notna()]
    if delta.empty:
        return ""
    delta = delta.drop(columns=list(STAT_KEYS)).rename(columns=dict(zip(DELTA_KEYS, STAT_KEYS,
                                                                        strict=True)))
    return stats_markdown(delta, order, note=DELTA_NOTE, signed=True)


def one_pair_note(spread: Path = PAIR_SPREAD) -> str:
    """What a table of one (lab seed, RL seed) pair per row says first: that it is one draw
    of the lab and the RL seed, and how far another draw moves a cell, as measured for the
    embedded default in ``spread`` (its closing line; only the pointer when it is not there)."""
    head = ("**One pair.** Every row here is one (lab seed, RL seed) pair: one draw of the "
            "lab's pre-training and of RL. `snakemake main_table` runs three pairs per row "
            "and gives each a spread and paired intervals over them.")
    try:
        found = _SPREAD_LINE.search(spread.read_text())
    except OSError:
        found = None
    if found is None:
        return (f"{head} How far another pair moves a cell: `python benchmarks/pair_spread.py "
                f"--summary results/summary/main_table` after it.")
    largest, where, median = found.groups()
    return (f"{head} On the embedded default another pair moves a cell by {median} pp at the "
            f"median and by up to {largest} pp ({where}), measured over three pairs in "
            f"`{spread}`.")


def table_markdown(pass1: pd.DataFrame, order: list[str],
                   versus: dict[str, pd.DataFrame] | None = None,
                   spread: Path = PAIR_SPREAD) -> str:
    """table.md: Pass@1, then its difference to the base, then to each ``versus`` row
    (``versus_table``); a table of one pair per row opens with ``one_pair_note(spread)``."""
    text = "Pass@1 (%)\n\n" + stats_markdown(pass1, order)
    if not pass1.empty and pass1["seeds"].max() == 1:
        text = one_pair_note(spread) + "\n\n" + text
    delta = delta_markdown(pass1, order)
    if delta:
        text += "\nPass@1 minus the base's of the same lab seed (pp)\n\n" + delta
    for row, table in (versus or {}).items():
        if not table.empty:
            text += (f"\nPass@1 minus {row}'s of the same lab seed (pp)\n\n"
                     + stats_markdown(table, order, note=DELTA_NOTE.replace("the base", row),
                                      signed=True))
    return text


# iterations.csv column -> (cost table header, scale): what a row spent per iteration
COST_COLUMNS = {
    "cost/rollout_tokens": ("rollout tokens", 1.0),
    "cost/teacher_written_tokens": ("teacher-written tokens", 1.0),
    "cost/teacher_read_tokens": ("teacher-read tokens", 1.0),
    "cost/generation_flops": ("policy sampling GFLOPs", 1e-9),
    "cost/train_flops": ("training GFLOPs", 1e-9),
    "cost/teacher_flops": ("teacher GFLOPs", 1e-9),
}
COST_NOTE = ("Mean per iteration over a row's runs and iterations (mintrl/training/cost.py): "
             "rollout tokens whoever wrote them; the tokens an intervener or a guiding teacher "
             "wrote; the tokens the teacher read (corrections' prefixes, a model judge, "
             "scoring); FLOPs at 2N a token for a forward pass and 6N for forward and backward "
             "(N parameters), padding included: the policy's sampling, its update (the "
             "pi_old pass, the training passes, a KL reference's), the teacher's. – : not "
             "counted (a vLLM sampler or teacher).")


def cost_table(iters: pd.DataFrame, row_of: dict[str, str], order: list[str]) -> pd.DataFrame:
    """Rows (in ``order``, then the others) × COST_COLUMNS headers: the mean per iteration
    over each row's runs and iterations; a row without a teacher has NaN teacher columns.
    Empty when no iteration logged a cost (segments written before costs were counted)."""
    cols = [c for c in COST_COLUMNS if c in iters]
    if iters.empty or not cols:
        return pd.DataFrame()
    frame = iters.assign(row=iters["run"].map(lambda r: row_of.get(r, r)))
    table = frame.groupby("row")[cols].mean()
    table = table.mul([COST_COLUMNS[c][1] for c in cols]).rename(
        columns={c: COST_COLUMNS[c][0] for c in cols})
    ranked = [r for r in order if r in table.index] + sorted(set(table.index) - set(order))
    return table.loc[ranked]


def cost_markdown(table: pd.DataFrame) -> str:
    """``cost_table`` as Markdown, with COST_NOTE below; "" for an empty table."""
    if table.empty:
        return ""
    cols = list(table.columns)
    lines = ["| row | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    for row, values in table.iterrows():
        cells = ["–" if pd.isna(v) else (f"{v:,.0f}" if "tokens" in c else f"{v:.2f}")
                 for c, v in zip(cols, values, strict=True)]
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n\n" + COST_NOTE + "\n"


def results_table(evals: pd.DataFrame, order: list[str]) -> pd.DataFrame:
    """Pass@1 in % at each run's latest evaluated iteration: rows runs, columns benchmarks."""
    table = latest(evals).pivot_table(index="run", columns="benchmark", values="pass@1") * 100
    # a run evaluated on fewer benchmarks gets no average: it would not compare with the others
    table["average"] = table.mean(axis=1, skipna=False)
    ranked = [r for r in order if r in table.index] + sorted(set(table.index) - set(order))
    return table.loc[ranked, benchmark_order(table.columns)].round(1)


def iteration_records(paths: list[Path]) -> pd.DataFrame:
    rows = []
    for path in paths:
        seg = json.loads(Path(path).read_text())
        rows += [{"run": seg["run"], "task": seg["task"], **it} for it in seg["iterations"]]
    return pd.DataFrame(rows)


def to_markdown(table: pd.DataFrame) -> str:
    cols = list(table.columns)
    lines = ["| run | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    for run, row in table.iterrows():
        lines.append(f"| {run} | " + " | ".join("–" if pd.isna(v) else f"{v:.1f}" for v in row)
                     + " |")
    return "\n".join(lines) + "\n"
