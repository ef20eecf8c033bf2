"""What a pipeline run logs to MLflow: its params and tags, its metrics by iteration from
the files its stages wrote, its inspector pages. ``python -m mintrl.track`` is its CLI.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from mintrl.config import Config
from mintrl.config.runs import Run, split_lab_model
from mintrl.methods import METHOD_KEYS, get_method, spec_keys
from mintrl.report.colours import FIXED, row_colours, shade
from mintrl.report.tracking import flatten

# Evaluation metrics logged as the results tables show them: percent, ``pass1/<task>/<split>``,
# so MLflow's columns reproduce a table for any set of runs.
TABLE_METRICS = {"pass@1": "pass1", "strict": "strict"}

# Where a run stops is not part of its identity: extending it continues the same MLflow run,
# with these as (mutable) tags instead of (immutable) params.
LENGTH_PARAMS = ("rl.iterations", "rl.eval_every", "rl.iterations_per_job")


def run_params(cfg: Config, run: Run | None, lab_seed: int = 0
               ) -> tuple[dict[str, str], dict[str, str]]:
    """(params, length tags): the resolved config this run used (the base run replaced by the
    run's own spec, without the keys its method does not read: GRPO has no ``rl.beta2``), with
    the run-length keys split off; ``run`` None: the base of lab seed
    ``lab_seed``. ``run.lab_seed`` only when not 0: lab 0's params, whose hash finds its MLflow
    runs, stay what they were, so its finished runs are continued rather than logged anew."""
    data = cfg.model_dump(mode="json", exclude={"runs", "rl", "tuned", "tune"})
    if run is not None:
        unused = METHOD_KEYS - spec_keys(get_method(run.method), run.spec.post_phase_objective)
        data["rl"] = run.spec.model_dump(mode="json", exclude=set(unused))  # its method's only
        data["run"] = {"seed": run.seed, "tasks": list(run.tasks)}  # rl.method names it
        lab_seed = run.lab_seed
    if lab_seed:
        data.setdefault("run", {})["lab_seed"] = lab_seed
    params = flatten(data)
    return params, {k: params.pop(k) for k in LENGTH_PARAMS if k in params}


def run_colour(runs: dict[str, Run], name: str) -> str:
    """The run's colour in MLflow (tag ``mlflow.runColor``): its row's colour in the report's
    figures, a shade lighter for each seed pair of the row before it; a lab's base or teacher
    in its role's colour, shaded by lab seed; a summary run dark grey."""
    if lab := split_lab_model(name):
        return shade(FIXED[lab[0]], lab[1])
    if name not in runs:
        return "#444444"
    run = runs[name]
    pairs = sorted((r.lab_seed, r.seed) for r in runs.values() if r.entry == run.entry)
    colours = row_colours(list(dict.fromkeys(r.entry for r in runs.values())))
    return shade(colours[run.entry], pairs.index((run.lab_seed, run.seed)))


def metric_key(*parts: str) -> str:
    """MLflow allows [A-Za-z0-9_-. /:] in names: ``pass@1`` becomes ``pass_at_1``."""
    return re.sub(r"[^A-Za-z0-9_\-. /:]", "_", "/".join(parts).replace("@", "_at_"))


def _kind_first(key: str, task: str) -> tuple[str, ...]:
    """A segment's ``rollout/reward`` on ``task`` -> (rollout, task, reward)."""
    kind, _, name = key.partition("/")
    return (kind, task, name) if name else ("train", task, kind)


def collect_metrics(segments: list[Path], evals: list[Path], sft: list[Path] = ()
                    ) -> list[tuple[str, float, int]]:
    """(key, value, step) from segment, evaluation and SFT-stage files. Every key is
    ``<kind>/<task>/<name>`` (``rollout/arith/reward``, ``pass1/arith/hard``): MLflow's charts
    fall into one section per kind, each comparing the tasks. SFT metrics (SFT+GRPO's
    supervised stage, before RL) are at step 0."""
    out = []
    for path in sft:
        m = json.loads(path.read_text())
        out += [(metric_key("sft", m["task"], k), v, 0) for k, v in m.items()
                if isinstance(v, int | float) and not isinstance(v, bool)]
    for path in segments:
        seg = json.loads(path.read_text())
        task = seg["task"]
        for it in seg["iterations"]:
            out += [(metric_key(*_kind_first(k, task)), v, it["iteration"])
                    for k, v in it.items() if k != "iteration" and isinstance(v, int | float)]
        out += [(metric_key("startup", task, k), v, seg["end"]) for k, v in seg["startup"].items()
                if isinstance(v, int | float)]
    for path in evals:
        m = json.loads(path.read_text())
        for split, values in m["splits"].items():
            step = m["iteration"] or 0
            for k, v in values.items():
                if not isinstance(v, int | float):  # strict is None without reference steps
                    continue
                if k in TABLE_METRICS:  # as the tables show them: percent, short names
                    out.append((f"{TABLE_METRICS[k]}/{m['task']}/{split}", 100 * v, step))
                else:
                    out.append((metric_key("eval", m["task"], split, k), v, step))
    return out


def run_span(segments: list[Path], evals: list[Path]) -> tuple[int | None, int | None]:
    """(start, end) in ms since the epoch of what the run did: its training segments (a file's
    time minus the segment's wall time), else its evaluations; (None, None) without files."""
    spans = []
    for path in segments or evals:
        data = json.loads(path.read_text())
        seconds = data["startup"]["wall"] if "startup" in data else data.get("seconds", 0.0)
        end = path.stat().st_mtime
        spans.append((end - float(seconds or 0.0), end))
    if not spans:
        return None, None
    return int(1000 * min(a for a, _ in spans)), int(1000 * max(b for _, b in spans))


def inspector_pages(segments: list[Path]) -> list[tuple[Path, str]]:
    """Each iteration's rollout inspector, as (file, ``inspector/<task>/iter_<i>``)."""
    out = []
    for path in segments:
        seg = json.loads(path.read_text())
        for page in map(Path, seg.get("inspectors", [])):
            if page.exists():
                out.append((page, f"inspector/{seg['task']}/{page.parent.name}"))
    return out
