"""SFT+GRPO's supervised stage (docs/design.md §1.3): the teacher's trajectories on the training
prompts, next-token training of the base on the kept ones. ``python -m mintrl.sft`` is its
CLI.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

from mintrl.algo.objectives import LossInputs, get_objective
from mintrl.config import SFTSpec
from mintrl.engine.base import Sampling
from mintrl.io import checkpoint_path, write_json, write_table
from mintrl.models import count_parameters, load_model
from mintrl.progress import progress
from mintrl.prompting import encode_prompts
from mintrl.rollouts import iteration_seed, load_problems, on_policy_rollouts
from mintrl.schemas import INTERVENTION, ROLLOUTS
from mintrl.training.batching import pack, plan_minibatches
from mintrl.training.trainer import deepspeed_engine, forward_logprobs, save_policy

SAMPLE_SEED, PLAN_SEED = 3, 4  # purposes of iteration_seed(run seed, 0, purpose)


def teacher_trajectories(teacher, teacher_tok, policy_tok, problems, n: int, sampling,
                         run: str) -> tuple[pd.DataFrame, dict[str, float]]:
    """``n`` teacher samples per prompt as ROLLOUTS rows (kind "sft", every token the
    intervention policy's), in the *policy's* token ids: the same ids when the vocabularies
    match, else the text re-tokenized (EOS kept) with unknown (NaN) log-probs."""
    df, times = on_policy_rollouts(teacher, teacher_tok, problems, n, sampling, run, 0, kind="sft")
    if teacher_tok.get_vocab() != policy_tok.get_vocab():
        prompts = [ids for ids in encode_prompts(policy_tok, problems) for _ in range(n)]
        texts = policy_tok(list(df["text"]), add_special_tokens=False)["input_ids"]
        eos = [[policy_tok.eos_token_id] if r == "stop" else [] for r in df["finish_reason"]]
        df["prompt_ids"] = prompts
        df["response_ids"] = [t + e for t, e in zip(texts, eos, strict=True)]
        df["logprobs"] = df["response_ids"].map(lambda ids: [float("nan")] * len(ids))
    df["provenance"] = df["response_ids"].map(lambda ids: [INTERVENTION] * len(ids))
    return df, times


def sft_train(engine, df: pd.DataFrame, spec: SFTSpec, pad_id: int, seed: int,
              device: str = "cpu") -> dict[str, float]:
    """``spec.epochs`` passes of next-token training on every response token of ``df``;
    one optimizer step per minibatch. Returns loss, steps, tokens and seconds."""
    objective = get_objective("sft")
    plans = plan_minibatches(len(df), spec, seed)
    engine.module.train()
    losses, tokens, t0 = [], 0.0, time.perf_counter()
    for mini in progress(plans, desc="sft", unit="step"):
        micro = [pack(df, rows, pad_id) for rows in mini]
        mb_tokens = float(sum(m.response_mask.sum() for m in micro))
        mb_rows = sum(len(m.rows) for m in micro)
        step_loss = 0.0
        for j, mb in enumerate(micro):
            engine.set_gradient_accumulation_boundary(j == len(micro) - 1)
            lp, _ = forward_logprobs(engine, mb, device)
            loss, _ = objective.loss(LossInputs(lp, mb.response_mask.to(device), mb_tokens,
                                                mb_rows), spec)
            engine.backward(loss)
            step_loss += loss.item()
        engine.step()
        losses.append(step_loss)
        tokens += mb_tokens
    return {"sft/first_loss": losses[0], "sft/final_loss": float(np.mean(losses[-5:])),
            "sft/optimizer_steps": float(len(plans)), "sft/trained_tokens": tokens,
            "time/sft_train": time.perf_counter() - t0}


def run_sft(cfg, run, task: str, teacher_dir: Path, init: Path, prompts: Path, out: Path,
            device: str) -> dict:
    """SFT+GRPO's supervised stage for ``run`` on ``task``: the teacher's trajectories on the
    prompts (``out/samples.parquet``), next-token training of ``init`` on the kept ones
    (``out/model``); returns and writes its metrics (``out/metrics.json``)."""
    from transformers import AutoTokenizer

    from mintrl.engine import load_engine

    run_spec = run.spec_for(task)
    spec = run_spec.sft
    t_start = time.perf_counter()
    print(f"[sft] {run.name}/{task}: {spec.samples_per_prompt} teacher samples per prompt, "
          f"{spec.epochs} epochs at lr {spec.lr:g}, device {device}", flush=True)
    # the teacher only writes text here: it runs where MInTRL's teacher runs (teacher_engine)
    teacher, teacher_tok = load_engine(run_spec.teacher_engine, str(teacher_dir),
                                       batch_size=512, device=device,
                                       gpu_memory=cfg.vllm_gpu_memory)
    policy_tok = AutoTokenizer.from_pretrained(checkpoint_path(init))
    sampling = Sampling.of(run_spec.sampling, cfg.tasks[task].max_new_tokens,
                            iteration_seed(run.seed, 0, SAMPLE_SEED))
    samples, times = teacher_trajectories(teacher, teacher_tok, policy_tok,
                                          load_problems(prompts), spec.samples_per_prompt,
                                          sampling, run.name)
    write_table(out / "samples.parquet", samples, ROLLOUTS)
    kept = samples[samples["reward"] > 0] if spec.only_correct else samples
    if kept.empty:
        raise SystemExit(f"sft: none of the teacher's {len(samples)} samples is correct; "
                         "set sft.only_correct: false or check the teacher")
    kept = kept.reset_index(drop=True)
    n_teacher = count_parameters(teacher_dir)
    del teacher

    model = load_model(init)
    engine = deepspeed_engine(model, run_spec, device, lr=spec.lr)
    stats = sft_train(engine, kept, spec, policy_tok.pad_token_id,
                      iteration_seed(run.seed, 0, PLAN_SEED), device)
    save_policy(engine, policy_tok, out / "model")
    n_params = sum(p.numel() for p in engine.module.parameters())
    generated = float(samples["response_ids"].map(len).sum())
    metrics = {
        "run": run.name, "task": task, "samples": len(samples), "kept": len(kept),
        "teacher_accuracy": float(samples["reward"].mean()),
        "teacher_tokens": generated, **stats,
        "time/teacher_generate": times["generate"], "time/reward": times["reward"],
        "time/total": time.perf_counter() - t_start,
        # generation ≈ 2·N FLOPs per token (teacher), training ≈ 6·N per token (policy)
        "compute/flops_estimate": 2 * n_teacher * generated
        + 6 * n_params * stats["sft/trained_tokens"],
    }
    write_json(out / "metrics.json", metrics)
    print(f"[sft] kept {len(kept)}/{len(samples)} teacher samples "
          f"(teacher accuracy {metrics['teacher_accuracy']:.3f}); loss "
          f"{stats['sft/first_loss']:.3f} -> {stats['sft/final_loss']:.3f} in "
          f"{stats['sft/optimizer_steps']:.0f} steps; {metrics['time/total']:.1f} s", flush=True)
    return metrics
