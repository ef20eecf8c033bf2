r"""Stage ``evaluate``: Pass@1 (mean correctness over k samples per problem) and pass@k.

    python -m mintrl.evaluate --config config/config.yaml --checkpoint results/models/arith/base \
        --prompts results/data/arith/easy.parquet results/data/arith/hard.parquet \
        --out results/eval/arith/base

Writes ``<out>/metrics.json`` (per split: Pass@1, pass@k, strict correctness, step accuracy,
lucky rate) and ``<out>/samples.parquet`` (one row per sample, schema ``EVAL_SAMPLES``).
"""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd

from mintrl.cli import CONFIG_HELP, THREADS_HELP, command_line
from mintrl.config import load_config
from mintrl.cpu_numerics import set_threads
from mintrl.engine import Sampling, load_engine
from mintrl.io import read_table, write_json, write_table
from mintrl.report.evaluation import (
    sample_problems,
    summarize_split,
)
from mintrl.schemas import EVAL_SAMPLES
from mintrl.tasks import Problem


def main(argv: list[str] | None = None) -> None:
    ap = command_line("python -m mintrl.evaluate", __doc__)
    ap.add_argument("--config", required=True, help=CONFIG_HELP)
    ap.add_argument("--checkpoint", required=True, help="Hugging Face checkpoint folder")
    ap.add_argument("--prompts", nargs="+", required=True, type=Path,
                    help="problem files (Parquet or JSONL with the problems schema)")
    ap.add_argument("--out", required=True, type=Path, help="output folder")
    ap.add_argument("--reward", help="task whose reward grades the samples (default: each "
                    "row's task column)")
    ap.add_argument("--task", help="config task of the problems (default: their task column)")
    ap.add_argument("--samples", type=int, help="samples per problem (default: config)")
    ap.add_argument("--engine", help="generation engine (default: the config's rl.engine)")
    ap.add_argument("--tensor-parallel", type=int, default=1,
                    help="vLLM: GPUs one engine spans (the job's `tp` resource)")
    ap.add_argument("--threads", type=int, help=THREADS_HELP)
    ap.add_argument("--run", help="run name recorded in metrics.json (for summaries)")
    ap.add_argument("--iteration", type=int, help="RL iteration of the checkpoint (0: none)")
    args = ap.parse_args(argv)

    cfg = load_config(args.config)
    set_threads(args.threads or cfg.threads)
    samples = args.samples or cfg.evaluation.samples
    args.engine = args.engine or cfg.rl.engine
    engine, tokenizer = load_engine(args.engine, args.checkpoint, cfg.evaluation.batch_size,
                                    cfg.device, args.tensor_parallel,
                                    gpu_memory=cfg.vllm_gpu_memory)
    print(f"[evaluate] run {args.run} iteration {args.iteration}: {args.checkpoint} on "
          f"{[str(p) for p in args.prompts]}, {samples} samples/problem, device {cfg.device}, "
          f"engine {args.engine}", flush=True)
    t0 = time.perf_counter()
    metrics: dict[str, dict] = {}
    frames = []
    for path in args.prompts:
        table = read_table(path)
        split = str(table["split"].iloc[0]) if "split" in table else path.stem
        problems = [Problem.from_row(r, args.reward) for r in table.to_dict("records")]
        task = args.task or problems[0].task
        if task not in cfg.tasks:
            raise SystemExit(f"{path}: task {task!r} has no entry under `tasks` in "
                             f"{args.config} (known: {sorted(cfg.tasks)}); pass --task")
        max_new = cfg.tasks[task].max_new_tokens
        sampling = Sampling.of(cfg.evaluation.sampling, max_new, cfg.seed)
        df, tok_s = sample_problems(engine, tokenizer, problems, samples, sampling,
                                    desc=f"evaluate {task}/{split}")
        df.insert(1, "split", split)
        metrics[split] = summarize_split(df, cfg.evaluation.pass_k) | {"tokens_per_s": tok_s}
        frames.append(df)
        print(f"[evaluate] {split}: pass@1 {metrics[split]['pass@1']:.3f} "
              f"strict {metrics[split]['strict']} ({tok_s:.0f} tok/s)", flush=True)
    print(f"[evaluate] done in {time.perf_counter() - t0:.0f} s: "
          + ", ".join(f"{s} pass@1 {m['pass@1']:.3f}" for s, m in metrics.items()), flush=True)
    write_table(args.out / "samples.parquet", pd.concat(frames, ignore_index=True), EVAL_SAMPLES)
    write_json(args.out / "metrics.json", {
        "checkpoint": str(args.checkpoint), "samples": samples, "splits": metrics,
        "run": args.run, "task": task, "iteration": args.iteration,
        "seconds": time.perf_counter() - t0,
    })


if __name__ == "__main__":
    from mintrl.cli import run_main

    run_main(main)
