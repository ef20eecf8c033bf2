"""The paper's claims, fixed before the sweep runs (issue 28), and the rule that decides each.

A claim is a list of comparisons, each ``row − versus`` on one benchmark, paired: the same
problems and evaluation draws, each run against ``versus``'s run of the same lab seed
(``versus_table``). Two rules decide every claim:

- ``above``: *reproduced* when every comparison's 95 % interval lies above 0; *not reproduced*
  when some comparison's upper bound is at or below 0 (the row is not above that one: equal or
  worse); *inconclusive* otherwise. "Best overall" is ``above`` against every other row;
  "a peak at moderate intensity" is ``above`` of the middle setting against both ends.
- ``within``: *reproduced* when every comparison's interval lies inside ±``margin`` pp;
  *not reproduced* when one lies wholly outside it; *inconclusive* otherwise.

A claim may also name comparisons it ``requires`` to be ``above`` before it can be decided:
two rows equal to each other say nothing about "self-intervention works" when neither moved
from the base, so such a claim is *inconclusive* until its reference rises above the base.

``config/claims.yaml`` holds the claims; ``docs/results.md`` states them first
(``preregistration_markdown``); ``python -m mintrl.claims`` decides them from evaluations.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, NamedTuple

import pandas as pd
import yaml
from pydantic import Field, ValidationError

from mintrl.config.base import ConfigError, Strict

REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE = "reproduced", "not reproduced", "inconclusive"
NOT_RUN = "not run"  # a comparison it needs has no evaluation: nothing is decided

Pair = tuple[str, str]  # (row, versus): row minus versus


class Claim(Strict):
    """One claim of the paper and how it is decided."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$", description="Short name.")
    paper: str = Field(description="What the paper says, in its words.")
    rule: Literal["above", "within"] = Field(description="The rule (module docstring).")
    compare: list[Pair] = Field(min_length=1, description="(row, versus) comparisons.")
    requires: list[Pair] = Field(
        default_factory=list,
        description="(row, versus) comparisons that must be above 0 for the claim to be "
                    "decided (otherwise inconclusive).")
    benchmarks: list[str] = Field(min_length=1, description="<task>/<split> that decide it.")
    margin: float = Field(3.0, gt=0, description="``within``: the margin in pp.")
    source: Literal["main_table", "ablation"] = Field(
        description="main_table: decided over the main table's (lab seed, RL seed) pairs; "
                    "ablation: first on the sweep's one pair, then, if reproduced there, again "
                    "over the reference row's pairs (`snakemake claims`).")


class Claims(Strict):
    """The file: the metric that decides, the one shown beside it, and the claims."""

    metric: Literal["pass@1"] = "pass@1"
    beside: Literal["strict"] = "strict"
    claims: list[Claim] = Field(min_length=1)


class Interval(NamedTuple):
    """A paired difference in pp: its mean and 95 % interval."""

    mean: float
    lo: float
    hi: float


class Verdict(NamedTuple):
    """A claim's outcome, the comparison that decided it (a required one when that failed)
    and why, in words."""

    claim: str
    outcome: str
    deciding: tuple[str, str, str]  # (row, versus, benchmark)
    interval: Interval
    reason: str


def load_claims(path: str | Path) -> Claims:
    """The claims file, validated; an error names the file and the bad key."""
    path = Path(path)
    data = yaml.safe_load(path.read_text()) or {}
    try:
        claims = Claims.model_validate(data)
    except ValidationError as err:
        keys = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors())
        raise ConfigError(f"invalid claims file {path}: {keys}") from None
    ids = [c.id for c in claims.claims]
    for c in claims.claims:
        if ids.count(c.id) > 1:
            raise ConfigError(f"invalid claims file {path}: claim id {c.id!r} appears twice")
    return claims


def comparisons(claim: Claim) -> list[tuple[str, str, str]]:
    """Every (row, versus, benchmark) a claim needs, its requirements first."""
    return [(r, v, b) for r, v in [*claim.requires, *claim.compare] for b in claim.benchmarks]


def _fmt(key: tuple[str, str, str], iv: Interval) -> str:
    row, versus, bench = key
    return f"{row} − {versus} on {bench}: {iv.mean:+.1f} [{iv.lo:+.1f}, {iv.hi:+.1f}] pp"


def verdict(claim: Claim, diffs: dict[tuple[str, str, str], Interval]) -> Verdict:
    """Apply the claim's rule to its comparisons' intervals (pp); a pure function.

    ``diffs``: (row, versus, benchmark) -> Interval, holding at least ``comparisons(claim)``
    (a missing one is a ``KeyError`` naming it: a claim is never decided on part of its
    evidence). The deciding comparison is the one closest to failing the rule."""
    for key in comparisons(claim):
        if key not in diffs:
            raise KeyError(f"claim {claim.id}: no evaluation of {key[0]} − {key[1]} on "
                           f"{key[2]}")
    for row, versus in claim.requires:
        for bench in claim.benchmarks:
            iv = diffs[(row, versus, bench)]
            if iv.lo <= 0:
                return Verdict(claim.id, INCONCLUSIVE, (row, versus, bench), iv,
                               f"requires {_fmt((row, versus, bench), iv)}, not above 0")
    keys = [(r, v, b) for r, v in claim.compare for b in claim.benchmarks]
    if claim.rule == "above":
        weakest = min(keys, key=lambda k: diffs[k].lo)
        worst = min(keys, key=lambda k: diffs[k].hi)
        if diffs[weakest].lo > 0:
            return Verdict(claim.id, REPRODUCED, weakest, diffs[weakest],
                           "every interval above 0; weakest " + _fmt(weakest, diffs[weakest]))
        if diffs[worst].hi <= 0:
            return Verdict(claim.id, NOT_REPRODUCED, worst, diffs[worst],
                           "interval at or below 0: " + _fmt(worst, diffs[worst]))
        return Verdict(claim.id, INCONCLUSIVE, weakest, diffs[weakest],
                       "interval spans 0: " + _fmt(weakest, diffs[weakest]))
    m = claim.margin
    widest = max(keys, key=lambda k: max(-diffs[k].lo, diffs[k].hi))
    outside = [k for k in keys if diffs[k].lo > m or diffs[k].hi < -m]
    if outside:
        return Verdict(claim.id, NOT_REPRODUCED, outside[0], diffs[outside[0]],
                       f"wholly outside ±{m:g} pp: " + _fmt(outside[0], diffs[outside[0]]))
    iv = diffs[widest]
    if iv.lo >= -m and iv.hi <= m:
        return Verdict(claim.id, REPRODUCED, widest, iv,
                       f"every interval inside ±{m:g} pp; widest " + _fmt(widest, iv))
    return Verdict(claim.id, INCONCLUSIVE, widest, iv,
                   f"interval crosses ±{m:g} pp: " + _fmt(widest, iv))


def missing_rows(claim: Claim, rows: set[str]) -> list[str]:
    """The rows ``claim`` names that are not among ``rows`` (a config's run entries, the base
    and the teacher): a claim about an ablation another config does not run."""
    named = dict.fromkeys(n for pair in [*claim.requires, *claim.compare] for n in pair)
    return [n for n in named if n not in rows]


def interval_table(scores: pd.DataFrame, claims: Claims, metric: str) -> dict:
    """(row, versus, benchmark) -> Interval of ``metric`` for every comparison any claim
    needs, from per-problem scores (``tables.problem_scores``), paired by lab seed."""
    from mintrl.report.tables import versus_table

    out = {}
    for versus in sorted({v for c in claims.claims for _, v, _ in comparisons(c)}):
        t = versus_table(scores, metric, versus)
        for r in t.itertuples(index=False):
            out[(r.row, versus, r.benchmark)] = Interval(r.mean, r.lo, r.hi)
    return out


def decide(main: dict, beside: dict, claims: Claims,
           rows: set[str] | None = None) -> pd.DataFrame:
    """One row per claim: its outcome, the deciding comparison with its interval (the
    deciding metric) and the same comparison in the metric shown beside it. ``main`` and
    ``beside``: ``interval_table`` of the two metrics. A claim naming a row outside ``rows``
    (the config's entries), or one with no evaluation, is not run."""
    nan = Interval(*[float("nan")] * 3)
    out = []
    for c in claims.claims:
        absent = missing_rows(c, rows) if rows is not None else []
        if absent:
            v = Verdict(c.id, NOT_RUN, comparisons(c)[0], nan,
                        f"the config has no run entry {', '.join(absent)}")
        else:
            try:
                v = verdict(c, main)
            except KeyError as err:
                missing = next(k for k in comparisons(c) if k not in main)
                v = Verdict(c.id, NOT_RUN, missing, nan, err.args[0])
        other = beside.get(v.deciding)
        out.append({"claim": c.id, "outcome": v.outcome, "row": v.deciding[0],
                     "versus": v.deciding[1], "benchmark": v.deciding[2],
                     "mean": v.interval.mean, "lo": v.interval.lo, "hi": v.interval.hi,
                     f"{claims.beside}_mean": other.mean if other else float("nan"),
                     f"{claims.beside}_lo": other.lo if other else float("nan"),
                     f"{claims.beside}_hi": other.hi if other else float("nan"),
                     "reason": v.reason})
    return pd.DataFrame(out)


def comparison_table(main: dict, claims: Claims, rows: set[str] | None = None) -> pd.DataFrame:
    """Every comparison of every claim that can be decided (no row missing): one row per
    (claim, row, versus, benchmark) with its interval in the deciding metric (pp; ``main``,
    as ``decide`` reads it), whether it is a requirement or a comparison, and the claim's rule
    and margin (the figure's input: a reader sees each claim's whole evidence, not only the
    deciding difference)."""
    out = []
    for c in claims.claims:
        if rows is not None and missing_rows(c, rows):
            continue
        for role, pairs in (("requires", c.requires), ("compare", c.compare)):
            for (row, versus), bench in ((p, b) for p in pairs for b in c.benchmarks):
                iv = main.get((row, versus, bench))
                if iv is not None:
                    out.append({"claim": c.id, "role": role, "rule": c.rule,
                                "margin": c.margin, "row": row, "versus": versus,
                                "benchmark": bench, **iv._asdict()})
    cols = ["claim", "role", "rule", "margin", "row", "versus", "benchmark", "mean", "lo", "hi"]
    return pd.DataFrame(out, columns=cols)


def _pairs(pairs: list[Pair]) -> str:
    return "; ".join(f"{r} − {v}" for r, v in pairs)


def preregistration_markdown(claims: Claims) -> str:
    """The claims as a reader should see them before any result: what decides each."""
    lines = ["| claim | the paper says | decided by | rule |", "|---|---|---|---|"]
    for c in claims.claims:
        rule = ("every interval above 0 (reproduced); an upper bound at or below 0 (not "
                "reproduced)" if c.rule == "above" else
                f"every interval inside ±{c.margin:g} pp (reproduced); one wholly outside (not "
                "reproduced)")
        needs = f"; needs {_pairs(c.requires)} above 0 first" if c.requires else ""
        where = ("the main table's 3 (lab seed, RL seed) pairs" if c.source == "main_table"
                 else "the sweep's pair, then every pair of the reference row if reproduced there "
                    "(`snakemake claims`)")
        lines.append(f"| `{c.id}` | {c.paper} | {_pairs(c.compare)} on "
                     f"{', '.join(c.benchmarks)}, {where} | {rule}{needs}; otherwise "
                     "inconclusive |")
    return "\n".join(lines) + "\n"


def verdict_markdown(table: pd.DataFrame, metric: str, beside: str) -> str:
    """The verdicts: one line per claim with the deciding difference and the other metric."""
    lines = [f"| claim | outcome | deciding difference, {metric} (pp) | {beside} (pp) | why |",
             "|---|---|---|---|---|"]
    for r in table.itertuples(index=False):
        b = [getattr(r, f"{beside}_{k}") for k in ("mean", "lo", "hi")]
        if r.outcome == NOT_RUN:
            lines.append(f"| `{r.claim}` | {r.outcome} | – | – | {r.reason} |")
            continue
        other = "–" if pd.isna(b[0]) else f"{b[0]:+.1f} [{b[1]:+.1f}, {b[2]:+.1f}]"
        lines.append(f"| `{r.claim}` | **{r.outcome}** | {r.row} − {r.versus} on {r.benchmark}: "
                     f"{r.mean:+.1f} [{r.lo:+.1f}, {r.hi:+.1f}] | {other} | {r.reason} |")
    return "\n".join(lines) + "\n"
