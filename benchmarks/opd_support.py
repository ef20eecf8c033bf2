"""Why OPD does not learn the hard split: the teacher's fact lies outside the policy's support.

Run after the main command (`snakemake --cores 2`). For each learning rate, OPD (seed 0, lab
seed 0, the main table's protocol, its other tuned settings) runs from the base to
``--iterations`` in a scratch copy of the lab (results/opd_support/lr_<lr>); then every unknown
fact of ``--task`` is scored digit by digit under the base, the teacher and each OPD policy:

    python benchmarks/opd_support.py --task arith   # -> results/benchmarks/opd_support_arith.*

OPD's per-token advantage ``log π_I − log π_old`` (docs/design.md §1.3) is scored on the tokens the
policy samples. A digit the policy gives e^-15 is never sampled, so nothing moves it up; mass
only moves between digits the policy already samples. The table shows where that leaves each
unknown fact's true value.
"""

from __future__ import annotations

# mintrl before torch: it pins the CPU kernels every stage runs (mintrl.cpu_numerics)
import mintrl  # noqa: F401

# isort: split
import argparse
import time
from pathlib import Path

import pandas as pd
import torch
from learnability import main_rows_config, paired, run_in_scratch, scratch_lab

from mintrl.config import load_config
from mintrl.engine import load_engine
from mintrl.io import read_table, write_json
from mintrl.tasks import Problem

RESULTS = Path("results")


def value_context(task: str, problem: Problem, key: int, value: int) -> str:
    """The reference response up to the first digit of ``key``'s value (the teacher's view)."""
    text = problem.solution
    # the lookup step: arith `#3=23`, intfn `k3=23` (mintrl.tasks.facts)
    name = f"#{key}=" if task == "arith" else f"\n\nk{key}="
    at = text.index(name) + len(name)
    if not text[at:].startswith(str(value)):
        raise SystemExit(f"{problem.id}: no value {value} of entry {key} at offset {at}")
    return problem.prompt + text[:at]


def digit_logprobs(model, tok, contexts: list[str], value: int) -> list[tuple[float, str]]:
    """Per digit of ``value``: the mean log-prob of the true digit given the true digits before
    it, over ``contexts``, and the policy's most likely digit there (the most common one)."""
    out = []
    for d in range(len(str(value))):
        lps, tops = [], []
        for ctx in contexts:
            ids = tok(ctx + str(value)[:d], add_special_tokens=False,
                      return_tensors="pt")["input_ids"]
            with torch.no_grad():
                lp = model(ids).logits[0, -1].log_softmax(-1)
            want = tok(str(value)[d], add_special_tokens=False)["input_ids"][0]
            lps.append(float(lp[want]))
            tops.append(tok.decode([int(lp.argmax())]))
        out.append((sum(lps) / len(lps), max(set(tops), key=tops.count)))
    return out


def run_opd(args, lr: float, work: Path) -> None:
    config = main_rows_config(Path(args.config), work, {"opd": {"lr": lr}})
    scratch_lab(work)
    target = f"results/eval/{args.task}/opd-s0/iter_{args.iterations}/metrics.json"
    run_in_scratch(work, config, [target], args.iterations, args.cores)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", default="config/config.yaml")
    ap.add_argument("--task", default="arith")
    ap.add_argument("--lrs", type=float, nargs="+", default=[5e-5, 1e-4, 2e-4])
    ap.add_argument("--iterations", type=int, default=40)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--work", type=Path, default=RESULTS / "opd_support")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.cores)
    cfg = load_config(args.config)
    table = cfg.tasks[args.task].facts.table()
    t0 = time.perf_counter()
    policies = {"base": RESULTS / "models" / args.task / "base",
                "teacher": RESULTS / "models" / args.task / "teacher"}
    base = pd.read_parquet(RESULTS / "eval" / "lab" / args.task / "base" / "samples.parquet")
    passes = {}
    for lr in args.lrs:
        work = args.work / args.task / f"lr_{lr:g}"
        run_opd(args, lr, work)
        run_dir = work / "results" / "runs" / args.task / "opd-s0"
        policies[f"OPD lr {lr:g}"] = run_dir / f"iter_{args.iterations}" / "model"
        samples = pd.read_parquet(work / "results" / "eval" / args.task / "opd-s0"
                                  / f"iter_{args.iterations}" / "samples.parquet")
        passes[lr] = {s: paired(base, samples, s) for s in cfg.tasks[args.task].eval_splits}
    problems = [Problem.from_row(r) for r in read_table(
        RESULTS / "data" / args.task / "hard.parquet").to_dict("records")]
    contexts = {k: [value_context(args.task, p, k, table.values[k]) for p in problems
                    if k in p.spec["facts"]["keys"]] for k in table.keys("unknown")}
    support = {}
    for name, path in policies.items():
        engine, tok = load_engine("transformers", str(path), 64)
        support[name] = {k: digit_logprobs(engine.model, tok, ctx, table.values[k])
                         for k, ctx in contexts.items()}
    seconds = time.perf_counter() - t0
    command = (f"python benchmarks/opd_support.py --task {args.task} --lrs "
               + " ".join(f"{lr:g}" for lr in args.lrs) + f" --iterations {args.iterations}")
    lines = [f"# OPD on the hard split: the teacher's facts outside the policy's support "
             f"({args.task})", "",
             f"`{command}` after the main command, {time.strftime('%Y-%m-%d')}; seed 0, lab "
             f"seed 0, the main table's protocol with OPD's learning rate varied; wall time "
             f"{seconds / 60:.1f} min.", "",
             f"Pass@1 (%) after {args.iterations} iterations minus the base's on the same "
             "problems (32 samples × 100 problems per split) [bootstrap 95 % interval over "
             "problems]:", "",
             "| OPD lr | " + " | ".join(cfg.tasks[args.task].eval_splits) + " |",
             "|---|" + "---:|" * len(cfg.tasks[args.task].eval_splits)]
    for lr, cells in passes.items():
        lines.append(f"| {lr:g} | " + " | ".join(
            f"{c['delta']:+.1f} [{c['lo']:.1f}, {c['hi']:.1f}]" for c in cells.values()) + " |")
    lines += ["", "Log-prob of each true digit of an unknown fact given the true digits before "
              "it, in the teacher's reference context (mean over the hard problems that look "
              "the fact up), and in brackets the policy's most likely digit there:", "",
              "| entry (true value) | digit | " + " | ".join(support) + " |",
              "|---|---:|" + "---:|" * len(support)]
    for k in contexts:
        v = str(table.values[k])
        for d in range(len(v)):
            lines.append(f"| {k} ({v}) | {d + 1} | " + " | ".join(
                f"{support[n][k][d][0]:.1f} ({support[n][k][d][1]})" for n in support) + " |")
    report = {"date": time.strftime("%Y-%m-%d"), "command": command, "seconds": seconds,
              "task": args.task, "iterations": args.iterations,
              "pass_at_1_minus_base": {f"{lr:g}": c for lr, c in passes.items()},
              "true_digit_logprob": {n: {str(k): s for k, s in v.items()}
                                     for n, v in support.items()}}
    out = RESULTS / "benchmarks"
    write_json(out / f"opd_support_{args.task}.json", report)
    (out / f"opd_support_{args.task}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
