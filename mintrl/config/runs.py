"""Runs of the sweep: a run is the base run (``rl:``) + an entry's overrides + a (lab seed,
RL seed) pair.

``resolve_runs(cfg)`` names and validates every run (main table, ablations, tuning points);
``segment_ends`` and ``kept_iterations`` say where a run's Snakemake jobs end and which
checkpoints are evaluated and kept; ``lab_model`` / ``split_lab_model`` name the lab's models
per lab seed. The keys themselves are defined in ``mintrl.config.rl`` and ``.model``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from mintrl.config.base import ConfigError
from mintrl.config.derived_runs import claim_entries, tune_entries
from mintrl.config.model import Config, RunEntry
from mintrl.config.naming import (  # noqa: F401  (names the package's modules import from here)
    ROLES,
    RUN_LENGTH_KEYS,
    TASK_FIXED_KEYS,
    lab_model,
    lab_suffix,
    run_name,
    seed_suffix,
    split_lab_model,
)
from mintrl.config.rl import RunSpec
from mintrl.methods import get_method


@dataclass(frozen=True)
class Run:
    """A resolved run: its name, (lab seed, RL seed) pair, full spec and the tasks it trains
    on."""

    name: str
    method: str
    seed: int
    spec: RunSpec
    tasks: tuple[str, ...]
    overrides: dict[str, Any]
    group: str = "main"
    entry: str = ""  # the run's name without its seed: the row it averages into
    primary: bool = True  # the entry's first pair (what the main command runs)
    stop: int = 0  # where the main table stops it (``main_iterations``); 0: not in it
    task_specs: tuple[tuple[str, RunSpec], ...] = ()  # tasks whose ``rl`` changes the spec
    lab_seed: int = 0  # which pre-training of the base and teacher it starts from (lab_model)

    def spec_for(self, task: str) -> RunSpec:
        """The run's spec on ``task``: the base run + the task's ``rl`` keys + the run's
        overrides (and tuned values). ``spec`` is the same without the task's keys; the two
        agree on every key that shapes the run's jobs (TASK_FIXED_KEYS)."""
        return dict(self.task_specs).get(task, self.spec)


def _nest(dotted: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in dotted.items():
        node = out
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return out


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def lab_seeds(runs: dict[str, Run]) -> list[int]:
    """The lab seeds ``runs`` start from (a table's base and teacher rows average over these);
    [0] when there are none."""
    return sorted({r.lab_seed for r in runs.values()}) or [0]


def run_lab_seed(runs: dict[str, Run], name: str) -> int:
    """The lab seed ``name`` belongs to: a run's, a lab model's own (``base-lab1``: 1), else 0."""
    if name in runs:
        return runs[name].lab_seed
    split = split_lab_model(name)
    return split[1] if split else 0


def entry_run_name(entry: RunEntry, seed: int, lab_seed: int) -> str:
    """The name of ``entry``'s run with this (lab seed, RL seed) pair: generated, or ``name``
    (with the pair's suffix when the entry has several pairs; as given when it has one)."""
    if not entry.name:
        return run_name(entry.method, entry.overrides, seed, lab_seed)
    if len(entry.seeds) > 1:
        return f"{entry.name}-{seed_suffix(seed, lab_seed)}"
    return entry.name


def _validated(merged: dict[str, Any], i: int, source: str, task: str | None = None) -> RunSpec:
    try:
        return RunSpec.model_validate(merged)
    except ValidationError as err:
        lines = [f"invalid config {source}:"]
        for e in err.errors():
            key = ".".join(str(p) for p in e["loc"])
            where = "method" if key == "method" else f"overrides.{key}"
            on = f" (with tasks.{task}.rl)" if task else ""
            lines.append(f"  runs.{i}.{where}{on}: {e['msg']}")
        raise ConfigError("\n".join(lines)) from None


def _task_keys(cfg: Config, source: str) -> dict[str, dict[str, Any]]:
    """Each task's ``rl`` keys, nested; a key that shapes jobs or is not a run key is an error."""
    out = {}
    for name, task in cfg.tasks.items():
        for key in task.rl:
            top = key.split(".")[0]
            if top in TASK_FIXED_KEYS or top not in RunSpec.model_fields:
                why = ("shapes the run's jobs, set it in rl or a run's overrides"
                       if top in TASK_FIXED_KEYS else "not a key of the run (rl)")
                raise ConfigError(f"invalid config {source}:\n  tasks.{name}.rl.{key}: {why}")
        if task.rl:
            out[name] = _nest(dict(task.rl))
    return out


def base_spec_for(cfg: Config, task: str) -> RunSpec:
    """The base run (``rl``) with ``task``'s ``rl`` keys: e.g. the default C/R/L on it."""
    return RunSpec.model_validate(_merge(cfg.rl.model_dump(), _nest(dict(cfg.tasks[task].rl))))


def _check_task_fit(spec: RunSpec, task: str, cfg: Config, i: int, source: str) -> None:
    """Settings a dataset task cannot honour: it has no step oracle and, usually, no reference
    solution to give a self-intervener."""
    if cfg.tasks[task].kind != "dataset":
        return
    phase = get_method(spec.method).phase
    uses_judge = phase is not None and phase.judge
    if uses_judge and spec.judge == "oracle":
        raise ConfigError(f"invalid config {source}:\n  runs.{i}.overrides.judge: task {task!r} "
                          "reads its problems from datasets and has no step oracle; use "
                          "judge: chat or likelihood")
    if uses_judge and spec.intervener == "self":
        raise ConfigError(f"invalid config {source}:\n  runs.{i}.overrides.intervener: task "
                          f"{task!r} has no reference solutions for intervener: self; use "
                          "intervener: self_chat (the policy prompted as the intervener)")


def _tuned_values(cfg: Config, entry: RunEntry, row: str) -> tuple[dict, dict]:
    """(inherited, own) tuned values of an entry. Own: its row's ``tuned`` block, over its
    overrides. Inherited, under its overrides: those of the row it names in ``tuned_as``, or,
    for an ablation of the ``ablation_reference`` row's method, that row's, so one knob at a
    time moves from the reference point (not from a step size of its own)."""
    if entry.group == "tune":
        return {}, {}
    own = cfg.tuned.get(row, {})
    if entry.tuned_as is not None:
        return dict(cfg.tuned.get(entry.tuned_as, {})), own
    ref = next((e for e in cfg.runs if e.name == cfg.ablation_reference), None)
    if own or entry.group == "main" or ref is None or ref.method != entry.method:
        return {}, own
    return dict(cfg.tuned.get(cfg.ablation_reference, {})), own


def resolve_runs(cfg: Config, source: str = "<config>") -> dict[str, Run]:
    """Every run of the sweep by name; a bad override raises naming ``runs.<i>.overrides.<key>``."""
    runs: dict[str, Run] = {}
    base = cfg.rl.model_dump()
    task_keys = _task_keys(cfg, source)
    for i, entry in enumerate([*cfg.runs, *tune_entries(cfg, source), *claim_entries(cfg)]):
        row = entry.name or run_name(entry.method, entry.overrides, None)
        inherited, tuned = _tuned_values(cfg, entry, row)
        own = _nest({**inherited, **entry.overrides, **tuned}) | {"method": entry.method}
        spec = _validated(_merge(base, own), i, source)
        has_phase = get_method(spec.method).phase is not None
        if has_phase and entry.group != "tune" and spec.intervention_iterations > spec.iterations:
            # A tuning run stops early on purpose; any other run would never leave its phase.
            key = (f"runs.{i}.overrides.intervention_iterations" if "intervention_iterations"
                   in entry.overrides else "rl.intervention_iterations")
            raise ConfigError(f"invalid config {source}:\n  {key}: T_I "
                              f"({spec.intervention_iterations}) is beyond the iterations "
                              f"({spec.iterations}) of runs.{i} ({entry.method})")
        tasks = tuple(spec.tasks or sorted(cfg.tasks))
        unknown = sorted(set(tasks) - set(cfg.tasks))
        if unknown:
            raise ConfigError(f"invalid config {source}:\n  runs.{i}.overrides.tasks: "
                              f"unknown tasks {unknown}; known: {sorted(cfg.tasks)}")
        task_specs = tuple((t, _validated(_merge(_merge(base, task_keys[t]), own), i, source, t))
                           for t in tasks if t in task_keys)
        for t in tasks:
            _check_task_fit(dict(task_specs).get(t, spec), t, cfg, i, source)
        stop = (min(cfg.main_iterations or spec.iterations, spec.iterations)
                if entry.group == "main" else 0)
        labs = entry.pair_lab_seeds
        _check_labs_fit(labs, tasks, cfg, i, source)
        for k, (seed, lab) in enumerate(zip(entry.seeds, labs, strict=True)):
            name = entry_run_name(entry, seed, lab)
            if name in runs or _reserved(name):
                raise ConfigError(f"invalid config {source}:\n  runs.{i}: run name {name!r} is "
                                  "used twice (or is reserved); set `name`")
            runs[name] = Run(name, entry.method, seed, spec, tasks, dict(entry.overrides),
                             entry.group, row, k == 0, stop, task_specs, lab)
    return runs


def _reserved(name: str) -> bool:
    """Names the lab's models and the summaries take in paths and MLflow."""
    return split_lab_model(name) is not None or name.startswith("summary-")


def _check_labs_fit(labs: list[int], tasks: tuple[str, ...], cfg: Config, i: int,
                    source: str) -> None:
    """A dataset task's models are fetched, not pre-trained: it has only lab seed 0."""
    for task in tasks:
        if cfg.tasks[task].kind == "dataset" and any(labs):
            raise ConfigError(f"invalid config {source}:\n  runs.{i}.lab_seeds: task {task!r} "
                              "fetches its base and teacher (no pre-training to seed): use "
                              "lab seed 0")


def reference_run(cfg: Config, runs: dict[str, Run]) -> str | None:
    """The run of ``ablation_reference`` (its first pair); an unknown row is a config error."""
    if cfg.ablation_reference is None:
        return None
    for name, run in runs.items():
        if run.group == "main" and run.entry == cfg.ablation_reference and run.primary:
            return name
    rows = sorted({r.entry for r in runs.values() if r.group == "main"})
    raise ConfigError(f"ablation_reference: no main-table row {cfg.ablation_reference!r}; "
                      f"rows: {rows}")


def kept_iterations(spec: RunSpec, stop: int = 0) -> list[int]:
    """Iterations whose checkpoint is evaluated and kept: every ``eval_every``, the last, and
    ``stop`` (where the main table ends a main-table run: ``Run.stop``)."""
    extra = {stop} if 0 < stop < spec.iterations else set()
    return sorted({*range(spec.eval_every, spec.iterations + 1, spec.eval_every),
                   spec.iterations, *extra})


def segment_ends(spec: RunSpec, stop: int = 0) -> list[int]:
    """Last iteration of each Snakemake job: every ``iterations_per_job``, and kept points."""
    step = spec.iterations_per_job
    cut_off = {spec.phase_end} if 0 < spec.phase_end < spec.iterations else set()
    return sorted({*range(step, spec.iterations + 1, step), *kept_iterations(spec, stop),
                   *cut_off})


def dotted(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested dict as one flat dict, nested keys dotted (``sampling.temperature``)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out |= dotted(value, name + ".")
        else:
            out[name] = value
    return out


def flat_spec(spec) -> dict[str, Any]:
    """A run spec as one flat dict (``dotted``)."""
    return dotted(spec.model_dump())


def single_knobs(specs: dict[str, dict], reference: str | None) -> dict[str, dict[str, float]]:
    """knob -> {row: value} for the rows whose numeric settings differ from ``reference``'s
    in exactly one key (``specs``: row -> flat run spec); the reference joins every knob."""
    if reference not in specs:
        return {}
    ref = specs[reference]
    out: dict[str, dict[str, float]] = {}
    for row, spec in specs.items():
        diff = [k for k in spec if k != "tasks" and spec[k] != ref.get(k)]
        if row == reference or len(diff) != 1 or not _is_number(spec[diff[0]]):
            continue
        knob = out.setdefault(diff[0], {})
        knob[row] = spec[diff[0]]
        if _is_number(ref.get(diff[0])):  # e.g. not a measured (None) const_c
            knob[reference] = ref[diff[0]]
    return out


def _is_number(x) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def varies_a_knob(runs: dict[str, Run], names: list[str], reference: str | None) -> bool:
    """Whether, among runs ``names``, some numeric setting varies alone against
    ``reference``'s at two values or more (a target then gets its knobs figure)."""
    specs = {runs[n].entry: flat_spec(runs[n].spec) for n in names}
    ref = runs[reference].entry if reference in runs else None
    return any(len(v) >= 2 for v in single_knobs(specs, ref).values())
