"""Run entries the config derives from its own: each point of a row's tuning grid (group
``tune``, `snakemake tune`) and the further (lab seed, RL seed) pairs of each one-pair ablation
(group ``claims``, `snakemake claims`)."""

from __future__ import annotations

import itertools
from typing import Any

from mintrl.config.base import ConfigError
from mintrl.config.model import Config, RunEntry
from mintrl.config.naming import run_name, seed_suffix


def tune_grid(cfg: Config, row: str) -> dict[str, list[Any]]:
    """A row's whole grid: the shared ``tune.lr`` (when given) crossed with its own knobs."""
    return ({"lr": list(cfg.tune.lr)} if cfg.tune.lr else {}) | cfg.tune.grids[row]


def tune_entries(cfg: Config, source: str = "<config>") -> list[RunEntry]:
    """The tuning runs (group "tune"): each row of ``tune.grids`` (a main-table row or another
    named entry) once per point of its grid (``tune_grid``), from the row's own overrides (not
    its tuned values), for ``tune.iterations`` on ``tune.tasks``, named ``tune-<row>-<k>``, on
    the row's first (lab seed, RL seed) pair."""
    rows = {e.name or run_name(e.method, e.overrides, None): e for e in cfg.runs}
    sizes = {}
    out = []
    for row, own in cfg.tune.grids.items():
        if row not in rows:
            raise ConfigError(f"invalid config {source}:\n  tune.grids.{row}: no run entry "
                              f"{row!r}; entries: {sorted(rows)}")
        if cfg.tune.lr and "lr" in own:
            raise ConfigError(f"invalid config {source}:\n  tune.grids.{row}.lr: the learning "
                              "rates are tune.lr, shared by every row")
        grid = tune_grid(cfg, row)
        entry = rows[row]
        points = [dict(zip(grid, values, strict=True))
                  for values in itertools.product(*grid.values())]
        sizes[row] = len(points)
        length = {"iterations": cfg.tune.iterations, "eval_every": cfg.tune.iterations,
                  "iterations_per_job": cfg.tune.iterations, "tasks": cfg.tune.tasks}
        for k, point in enumerate(points):
            out.append(RunEntry(method=entry.method, group="tune", name=f"tune-{row}-{k}",
                                seeds=entry.seeds[:1], lab_seeds=entry.pair_lab_seeds[:1],
                                overrides={**entry.overrides, **point, **length}))
    if len(set(sizes.values())) > 1:
        raise ConfigError(f"invalid config {source}:\n  tune.grids: every row gets the same "
                          f"tuning budget; grid points per row: {sizes}")
    return out


CLAIMS_GROUP = "claims"  # the ablations' further pairs: `snakemake claims`, not the sweep


def claim_entries(cfg: Config) -> list[RunEntry]:
    """The further (lab seed, RL seed) pairs of each one-pair ablation entry (group
    ``claims``), so that a claim reproduced on the sweep's one pair can be decided again over
    the pairs of the ``ablation_reference`` row it is compared with (its pairs after the
    first; none without a reference). Same row, same overrides and tuned values; named like
    any entry's pairs (``C16-lab1-s1``). Entries on a dataset task have one lab and get none;
    so does every entry when the reference's further pairs do not each have a lab of their own
    (pairing is by lab seed)."""
    ref = next((e for e in cfg.runs if e.name == cfg.ablation_reference), None)
    if ref is None or len(ref.seeds) < 2:
        return []
    seeds, labs = ref.seeds[1:], ref.pair_lab_seeds[1:]
    if 0 in labs or len(set(labs)) < len(labs):
        return []  # a difference pairs each run with the reference's of its lab: one run a lab
    out = []
    for entry in cfg.runs:
        tasks = entry.overrides.get("tasks", cfg.rl.tasks) or list(cfg.tasks)
        if (entry.group in ("main", "tune") or len(entry.seeds) > 1
                or any(cfg.tasks[t].kind == "dataset" for t in tasks if t in cfg.tasks)):
            continue
        name = entry.name or run_name(entry.method, entry.overrides, None)
        if len(seeds) == 1:  # one pair keeps a given name as it is: give it its suffix
            name = f"{name}-{seed_suffix(seeds[0], labs[0])}"
        out.append(entry.model_copy(update={"group": CLAIMS_GROUP, "name": name,
                                            "seeds": list(seeds), "lab_seeds": list(labs)}))
    return out


def tune_points(cfg: Config) -> dict[str, tuple[str, dict[str, Any]]]:
    """Tuning run name -> (row, grid point)."""
    out = {}
    for row in cfg.tune.grids:
        grid = tune_grid(cfg, row)
        for k, values in enumerate(itertools.product(*grid.values())):
            out[f"tune-{row}-{k}"] = (row, dict(zip(grid, values, strict=True)))
    return out
