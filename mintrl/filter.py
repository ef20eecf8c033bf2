r"""Stage ``filter``: drop training prompts the base policy always solves (docs/design.md §2).

    python -m mintrl.filter --config config/config.yaml --checkpoint results/models/arith/base \
        --prompts results/data/arith/train.parquet \
        --out results/data/arith/train_filtered.parquet \
        --rates results/filter/arith/pass_rates.parquet

k samples per prompt; prompts solved k/k are dropped except a ``keep_solved`` share (drawn
with the config seed), so RL still trains the skills the toy's easy problems need.
"""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd

from mintrl.cli import CONFIG_HELP, THREADS_HELP, command_line
from mintrl.config import load_config
from mintrl.cpu_numerics import set_threads
from mintrl.engine import load_engine
from mintrl.engine.base import Sampling
from mintrl.filtering import (
    choose_prompts,
)
from mintrl.io import read_table, write_table
from mintrl.report.evaluation import sample_problems
from mintrl.schemas import PASS_RATES, PROBLEMS
from mintrl.tasks import Problem


def main(argv: list[str] | None = None) -> None:
    ap = command_line("python -m mintrl.filter", __doc__)
    ap.add_argument("--config", required=True, help=CONFIG_HELP)
    ap.add_argument("--checkpoint", required=True, help="the base policy")
    ap.add_argument("--prompts", required=True, type=Path, help="training split (Parquet)")
    ap.add_argument("--out", required=True, type=Path, help="filtered prompts (Parquet)")
    ap.add_argument("--rates", required=True, type=Path, help="pass rate per prompt (Parquet)")
    ap.add_argument("--task", help="config task of the prompts (default: their task column)")
    ap.add_argument("--engine", help="generation engine (default: the config's rl.engine)")
    ap.add_argument("--tensor-parallel", type=int, default=1,
                    help="vLLM: GPUs one engine spans (the job's `tp` resource)")
    ap.add_argument("--threads", type=int, help=THREADS_HELP)
    args = ap.parse_args(argv)
    cfg = load_config(args.config)
    set_threads(args.threads or cfg.threads)
    table = read_table(args.prompts)
    if "chat" not in table:  # a split written before prompts carried their rendering
        table["chat"] = False
    problems = [Problem.from_row(r) for r in table.to_dict("records")]
    task = args.task or problems[0].task
    if task not in cfg.tasks:
        raise SystemExit(f"{args.prompts}: task {task!r} has no entry under `tasks` in "
                         f"{args.config} (known: {sorted(cfg.tasks)}); pass --task")
    engine, tokenizer = load_engine(args.engine or cfg.rl.engine, args.checkpoint,
                                    cfg.evaluation.batch_size, cfg.device, args.tensor_parallel,
                                    gpu_memory=cfg.vllm_gpu_memory)
    sampling = Sampling.of(cfg.rl.sampling, cfg.tasks[task].max_new_tokens, cfg.seed)
    print(f"[filter] {task}: {len(problems)} training prompts x {cfg.filter.samples} samples of "
          f"{args.checkpoint}, device {cfg.device}, engine {args.engine or cfg.rl.engine}",
          flush=True)
    t0 = time.perf_counter()
    samples, _ = sample_problems(engine, tokenizer, problems, cfg.filter.samples, sampling,
                                 desc=f"filter {task}")
    rate = samples.groupby("problem_id", sort=False)["reward"].mean()
    rates = pd.DataFrame({"problem_id": table["id"], "difficulty": table["difficulty"],
                          "samples": cfg.filter.samples,
                          "pass_rate": table["id"].map(rate).to_numpy()})
    rates["kept"] = choose_prompts(rates, cfg.filter, cfg.seed)
    if not rates["kept"].any():
        raise SystemExit(f"{args.prompts}: the base policy solves every prompt {cfg.filter.samples}"
                         f"/{cfg.filter.samples} times and filter.keep_solved is 0: nothing left")
    write_table(args.rates, rates, PASS_RATES)
    write_table(args.out, table[rates["kept"].to_numpy()], PROBLEMS)
    solved = int((rates["pass_rate"] >= 1).sum())
    print(f"[filter] {task} done in {time.perf_counter() - t0:.0f} s: {len(rates)} prompts, "
          f"{solved} always solved, "
          f"{int((rates['pass_rate'] == 0).sum())} never; kept {int(rates['kept'].sum())}",
          flush=True)
    print(rates.groupby("difficulty")["pass_rate"].mean().round(3).to_string(), flush=True)


if __name__ == "__main__":
    from mintrl.cli import run_main

    run_main(main)
