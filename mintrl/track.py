"""Stage ``track``: log one pipeline run (or a lab seed's base evaluation) into MLflow.

    python -m mintrl.track --config results/config/resolved.yaml --run grpo-s0 \
        --segments results/runs/*/grpo-s0/iter_*/segment.json \
        --evals results/eval/*/grpo-s0/iter_*/metrics.json \
        --out results/tracking/grpo-s0.json

Params = the resolved config as the run saw it; tags = method, seed, lab seed, overrides,
git commit, config hash; metrics per iteration (step = iteration) from the segments' files,
evaluation metrics at their iteration (the base evaluation at step 0). Safe to repeat: only
what the store lacks is logged.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from mintrl.config import Config, load_config
from mintrl.config.runs import Run, resolve_runs, split_lab_model
from mintrl.io import write_json
from mintrl.report.tracking import flatten, git_commit, log_run

# Where a run stops is not part of its identity: extending it continues the same MLflow run,
# with these as (mutable) tags instead of (immutable) params.
LENGTH_PARAMS = ("rl.iterations", "rl.eval_every", "rl.iterations_per_job")


def run_params(cfg: Config, run: Run | None, lab_seed: int = 0
               ) -> tuple[dict[str, str], dict[str, str]]:
    """(params, length tags): the resolved config this run used (the base run replaced by the
    run's own spec), with the run-length keys split off; ``run`` None: the base of lab seed
    ``lab_seed``. ``run.lab_seed`` only when not 0: lab 0's params, whose hash finds its MLflow
    runs, stay what they were, so its finished runs are continued rather than logged anew."""
    data = cfg.model_dump(mode="json", exclude={"runs", "rl"})
    if run is not None:
        data["rl"] = run.spec.model_dump(mode="json")
        data["run"] = {"method": run.method, "seed": run.seed, "tasks": list(run.tasks)}
        lab_seed = run.lab_seed
    if lab_seed:
        data.setdefault("run", {})["lab_seed"] = lab_seed
    params = flatten(data)
    return params, {k: params.pop(k) for k in LENGTH_PARAMS if k in params}


def metric_key(*parts: str) -> str:
    """MLflow allows [A-Za-z0-9_-. /:] in names: ``pass@1`` becomes ``pass_at_1``."""
    return re.sub(r"[^A-Za-z0-9_\-. /:]", "_", "/".join(parts).replace("@", "_at_"))


def collect_metrics(segments: list[Path], evals: list[Path], sft: list[Path] = ()
                    ) -> list[tuple[str, float, int]]:
    """(key, value, step) from segment, evaluation and SFT-stage files; keys start with the
    task. SFT metrics (SFT+GRPO's supervised stage, before RL) are at step 0."""
    out = []
    for path in sft:
        m = json.loads(path.read_text())
        out += [(metric_key(m["task"], "sft", k), v, 0) for k, v in m.items()
                if isinstance(v, int | float) and not isinstance(v, bool)]
    for path in segments:
        seg = json.loads(path.read_text())
        task = seg["task"]
        for it in seg["iterations"]:
            out += [(metric_key(task, k), v, it["iteration"]) for k, v in it.items()
                    if k != "iteration" and isinstance(v, int | float)]
        out += [(metric_key(task, "startup", k), v, seg["end"]) for k, v in seg["startup"].items()
                if isinstance(v, int | float)]
    for path in evals:
        m = json.loads(path.read_text())
        for split, values in m["splits"].items():
            out += [(metric_key(m["task"], "eval", split, k), v, m["iteration"] or 0)
                    for k, v in values.items() if isinstance(v, int | float)]
    return out


def inspector_pages(segments: list[Path]) -> list[tuple[Path, str]]:
    """Each iteration's rollout inspector, as (file, ``inspector/<task>/iter_<i>``)."""
    out = []
    for path in segments:
        seg = json.loads(path.read_text())
        for page in map(Path, seg.get("inspectors", [])):
            if page.exists():
                out.append((page, f"inspector/{seg['task']}/{page.parent.name}"))
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m mintrl.track",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--config", required=True)
    ap.add_argument("--run", required=True, help="a run of the config, a lab's base ('base', "
                    "'base-lab1', ...), or 'summary-<target>' (a run holding that target's "
                    "tables and plots)")
    ap.add_argument("--segments", nargs="*", type=Path, default=[])
    ap.add_argument("--evals", nargs="*", type=Path, default=[])
    ap.add_argument("--sft", nargs="*", type=Path, default=[], help="SFT stage metrics files")
    ap.add_argument("--artifacts", nargs="*", type=Path, default=[])
    ap.add_argument("--out", required=True, type=Path, help="what was logged (JSON)")
    args = ap.parse_args(argv)
    cfg = load_config(args.config)
    runs = resolve_runs(cfg, args.config)
    is_summary = args.run.startswith("summary-")
    lab = split_lab_model(args.run)
    is_base = lab is not None and lab[0] == "base"  # a lab's teacher is evaluated, not tracked
    if not (is_base or is_summary or args.run in runs):
        raise SystemExit(f"unknown run {args.run!r}; runs of {args.config}: {sorted(runs)}")
    run = runs.get(args.run)
    if is_summary:
        params, tags = {}, {"method": "summary", "target": args.run.removeprefix("summary-"),
                            "git_commit": git_commit()}
    else:
        lab_seed = run.lab_seed if run else lab[1]
        params, length = run_params(cfg, run, lab_seed)
        tags = {"method": run.method if run else "base", "seed": run.seed if run else cfg.seed,
                "lab_seed": lab_seed, "group": run.group if run else "main",
                "row": run.entry if run else "base",
                "overrides": json.dumps(run.overrides, sort_keys=True) if run else "{}",
                "git_commit": git_commit(), **length}
    summary = log_run(cfg.tracking_uri, cfg.experiment, args.run, params=params, tags=tags,
                      metrics=collect_metrics(args.segments, args.evals, args.sft),
                      artifacts=[*args.artifacts, *inspector_pages(args.segments)])
    write_json(args.out, summary | {"run": args.run, "tracking_uri": cfg.tracking_uri,
                                    "experiment": cfg.experiment})
    print(f"[track] {args.run}: {summary['new_metrics']} new of {summary['metrics']} metric "
          f"points -> {cfg.tracking_uri} ({cfg.experiment})", flush=True)


if __name__ == "__main__":
    main()
