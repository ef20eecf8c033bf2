"""Base pre-training length over lab seeds: validation Pass@1 by fact kind during training.

The lab's easy split needs a base that reliably reads and applies the operations it was
trained on; whether a pre-training length gets there depends on the lab seed (issue 23: at
1000 steps the arith base read 58.6 / 94.8 / 87.2 % on easy for lab seeds 0 / 1 / 2). This
pre-trains one task's base, for one lab seed, with overrides of ``tasks.<task>.base``, and
samples the **validation** split (never a reported one) at the given steps:

    python benchmarks/base_steps.py --task arith --lab 0 --set steps=1400 --eval 1000,1200
    python benchmarks/base_steps.py --report   # -> results/benchmarks/base_steps.md

Each run writes ``results/benchmarks/base_steps/<task>_<overrides>_lab<k>.json``. The splits
are drawn into ``--work`` by ``mintrl.prepare`` (the same files as the main command's) and held
out of the base's data, as the pre-training stage holds them out. The model at ``steps`` is the
one ``python -m mintrl.pretrain`` writes for those settings (same seed, data stream and
schedule: it runs that stage's loop, ``mintrl.training.pretraining.pretrain``); a checkpoint at
an earlier step is not (the cosine schedule follows ``steps``).
"""

from __future__ import annotations

# mintrl before torch: it pins the CPU kernels every stage runs (mintrl.cpu_numerics)
import mintrl  # noqa: F401

# isort: split
import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from mintrl.config import load_config
from mintrl.cpu_numerics import set_threads
from mintrl.engine import Sampling
from mintrl.engine.transformers_engine import TransformersEngine
from mintrl.io import read_table, write_json
from mintrl.report.evaluation import sample_problems
from mintrl.tasks import Problem, get_task
from mintrl.tokenizer import build_char_tokenizer
from mintrl.training.pretraining import held_out_prompts, pretrain

OUT = Path("results/benchmarks/base_steps")


def probe(config: Path, task_name: str, lab: int, overrides: dict, evals: set[int],
          samples: int, work: Path) -> dict:
    cfg = load_config(config)
    task_spec = cfg.tasks[task_name]
    spec = task_spec.base.model_copy(update=overrides)
    table = task_spec.facts.table()
    data = work / "data" / task_name
    if not (data / "validation.parquet").exists():
        subprocess.run([sys.executable, "-m", "mintrl.prepare", "--config", str(config),
                        "--task", task_name, "--out", str(data)], check=True)
    set_threads(spec.threads)
    val = [Problem.from_row(r) for r in read_table(data / "validation.parquet").to_dict("records")]
    level = {p.id: table.problem_level(p.spec["facts"]["keys"]) for p in val}
    tok = build_char_tokenizer()
    records, clock = [], {"start": time.perf_counter(), "sampling": 0.0}

    def sample(step: int, model) -> None:
        if step not in evals | {spec.steps}:
            return
        t0 = time.perf_counter()
        model.eval()
        engine = TransformersEngine(model, tok.eos_token_id, tok.pad_token_id)
        df, _ = sample_problems(engine, tok, val, samples,
                                Sampling(max_new_tokens=task_spec.max_new_tokens, seed=0))
        model.train()
        by = df.assign(level=df["problem_id"].map(level)).groupby("level")["reward"].mean()
        records.append({"step": step, "train_s": round(t0 - clock["start"] - clock["sampling"]),
                        "pass1": {k: round(float(v), 4) for k, v in by.items()}})
        clock["sampling"] += time.perf_counter() - t0
        print(json.dumps(records[-1]), flush=True)

    # the stage's own loop (same seed, data stream and schedule), sampled along the way
    _, _, history, _ = pretrain(get_task(task_name), spec, cfg.seed + spec.seed,
                                held_out_prompts(data), progress=False, lab_seed=lab,
                                facts=table, after_step=sample)
    for rec in records:  # the mean loss of the 20 steps up to the sample
        rec["loss"] = float(np.mean([loss for step, loss in history[:rec["step"]][-20:]]))
    return {"task": task_name, "lab": lab, "set": overrides, "steps": spec.steps,
            "samples": samples, "evals": records}


def report(folder: Path) -> str:
    lines = ["| task | settings | lab | step | known | " + " | ".join(
        f"partial q={q}" for q in ("0.2", "0.35", "0.5")) + " | unknown | train s |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    runs = [json.loads(f.read_text()) for f in sorted(folder.glob("*.json"))]
    for r in sorted(runs, key=lambda r: (r["task"], json.dumps(r["set"]), r["lab"])):
        name = ", ".join(f"{k}={v}" for k, v in r["set"].items()) or "default"
        for e in r["evals"]:
            p = e["pass1"]
            cells = [p.get(k, float("nan")) * 100 for k in (
                "known", "partial q=0.2", "partial q=0.35", "partial q=0.5", "unknown")]
            lines.append(f"| {r['task']} | {name} (of {r['steps']}) | {r['lab']} | "
                         f"{e['step']} | " + " | ".join(f"{c:.1f}" for c in cells)
                         + f" | {e['train_s']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", type=Path, default=Path("config/config.yaml"))
    ap.add_argument("--task", default="arith")
    ap.add_argument("--lab", type=int, default=0, help="lab seed")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=JSON",
                    help="override of tasks.<task>.base, e.g. steps=1400 or lr=0.006")
    ap.add_argument("--eval", default="", help="comma-separated steps to sample at "
                    "(the last step always)")
    ap.add_argument("--samples", type=int, default=8, help="samples per validation problem")
    ap.add_argument("--work", type=Path, default=Path("results/benchmarks/base_steps_work"))
    ap.add_argument("--report", action="store_true", help="tabulate the runs written so far")
    args = ap.parse_args(argv)
    if args.report:
        (OUT.parent / "base_steps.md").write_text(report(OUT))
        print(report(OUT))
        return
    overrides = {}
    for item in args.set:
        key, _, value = item.partition("=")
        overrides[key] = json.loads(value)
    evals = {int(x) for x in args.eval.split(",") if x}
    result = probe(args.config, args.task, args.lab, overrides, evals, args.samples, args.work)
    tag = "_".join(f"{k}{v}" for k, v in overrides.items()) or "default"
    write_json(OUT / f"{args.task}_{tag}_lab{args.lab}.json", result)


if __name__ == "__main__":
    main()
