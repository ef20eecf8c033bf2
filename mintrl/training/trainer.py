"""One RL iteration of optimisation with DeepSpeed (CPU backend here, ZeRO on GPUs).

``train_iteration`` takes an iteration's rollouts, recomputes the old-policy log-probs with the
current weights (never trusting the sampler's numbers: docs/design.md §1.2), computes advantages at
train time, and takes one optimizer step per minibatch with the registered objective.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from mintrl.algo.anchors import get_anchor
from mintrl.algo.objectives import LossInputs, Objective, get_objective
from mintrl.algo.train_targets import rewards_of
from mintrl.config import RunSpec
from mintrl.training.batching import MicroBatch, pack, plan_minibatches, rank_share
from mintrl.training.cost import diagnostic
from mintrl.training.diagnostics import gradient_parts, stability_c, update_stats
from mintrl.training.distributed import (
    extensions_dir,
    load_shared_memory_op,
    loss_scale,
    shared_atomic_path,
    sum_floats,
    sum_tensor,
    world,
)
from mintrl.training.logprobs import lm_logprobs

DS_TAG = "state"  # DeepSpeed checkpoint tag inside an optimizer-state folder


def dist_ready() -> bool:
    import torch.distributed as dist

    return dist.is_available() and dist.is_initialized()


def init_distributed(device: str) -> None:
    """Join the launcher's process group (torchrun, even with one process: its agent's store
    must be used as it is; deepspeed's launcher: WORLD_SIZE > 1), or without a launcher make a
    one-process group on a free port: parallel Snakemake jobs on one machine must not share
    a port, whatever MASTER_PORT the shell happens to export (or a parent process set)."""
    os.environ.setdefault("TORCH_EXTENSIONS_DIR", extensions_dir())
    import deepspeed

    load_shared_memory_op()

    launched = ("TORCHELASTIC_RUN_ID" in os.environ
                or int(os.environ.get("WORLD_SIZE", "1")) > 1)
    if not launched and not dist_ready():
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1",
                          MASTER_PORT=str(port))
    elif not launched:  # a one-process group made before us (vLLM's): DeepSpeed reads these
        for key, value in (("RANK", "0"), ("LOCAL_RANK", "0"), ("WORLD_SIZE", "1")):
            os.environ.setdefault(key, value)
    elif device.startswith("cuda"):  # one GPU per rank: the launcher's LOCAL_RANK
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    deepspeed.init_distributed(dist_backend="nccl" if device.startswith("cuda") else "gloo")


def deepspeed_engine(model, spec: RunSpec, device: str = "cpu", lr: float | None = None):
    """Wrap ``model`` in a DeepSpeed engine with AdamW at a constant learning rate
    (``spec.lr`` unless ``lr`` is given: the SFT stage has its own).

    The optimizer is torch's fused AdamW handed to DeepSpeed: DeepSpeed's own CPU Adam would
    JIT-compile a C++ op on a fresh machine, and the unfused step's square root goes through
    MKL's vector maths on CPU, whose result depends on MKL's code branch (fused, ATen takes
    the exact one; benchmarks/results/cpu_vendor_mkl_products.md). We own the accumulation boundary
    (``set_gradient_accumulation_boundary``), so a minibatch may hold any number of
    micro-batches; the objective already divides by the minibatch's token count.
    """
    import deepspeed

    init_distributed(device)
    if spec.deepspeed.gradient_checkpointing:
        # non-reentrant: works with inputs that do not require grad and with ZeRO-3 hooks
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr or spec.lr,
                                  weight_decay=spec.weight_decay, betas=(0.9, 0.999),
                                  fused=True)
    ds_config = {
        "train_micro_batch_size_per_gpu": spec.micro_batch_size,
        "gradient_accumulation_steps": 1,
        "gradient_clipping": spec.max_grad_norm,
        "zero_optimization": {"stage": spec.deepspeed.zero_stage},
        "bf16": {"enabled": spec.deepspeed.bf16},
        "steps_per_print": 10**9,
        "wall_clock_breakdown": False,
    }
    engine, *_ = deepspeed.initialize(model=model, optimizer=optimizer, config=ds_config)
    return engine


def save_policy(engine, tokenizer, out: Path) -> None:
    """The engine's model as a Hugging Face folder (written atomically by rank 0). Under
    ZeRO-3 each rank holds a shard of every weight: they are gathered first."""
    import contextlib

    import deepspeed
    import torch.distributed as dist

    from mintrl.io import save_checkpoint

    gather = (deepspeed.zero.GatheredParameters(list(engine.module.parameters()))
              if engine.zero_optimization_stage() == 3 else contextlib.nullcontext())
    with gather:
        if not dist.is_initialized() or dist.get_rank() == 0:
            save_checkpoint(engine.module, tokenizer, out)


def save_optimizer_state(engine, out: Path, iteration: int) -> None:
    """DeepSpeed checkpoint (module + optimizer state) of the engine, written atomically."""
    with shared_atomic_path(out) as tmp:
        engine.save_checkpoint(str(tmp), tag=DS_TAG, client_state={"iteration": iteration})


def load_optimizer_state(engine, folder: Path) -> int:
    """Restore module and optimizer state; returns the iteration it was saved at."""
    if not (Path(folder) / DS_TAG).is_dir():
        raise FileNotFoundError(f"{folder}: no DeepSpeed checkpoint with tag {DS_TAG!r}")
    _, client = engine.load_checkpoint(str(folder), tag=DS_TAG)
    if client is None:
        raise FileNotFoundError(f"{folder}: DeepSpeed could not load tag {DS_TAG!r}")
    return int(client["iteration"])


def forward_logprobs(model, mb: MicroBatch, device: str, with_entropy: bool = False):
    """(b, T) token log-probs at response positions (0 elsewhere), optionally the entropy
    of each response token's distribution; the LM head runs at response positions only,
    chunk by chunk (``lm_logprobs``: no (b, T, V) logits)."""
    return lm_logprobs(model, mb.input_ids.to(device), mb.attention_mask.to(device),
                       mb.response_mask.to(device), with_entropy=with_entropy)


@dataclass
class Targets:
    """Per-rollout quantities fixed for the iteration, each (N,)."""

    rewards: torch.Tensor
    advantages: torch.Tensor | None = None  # GRPO, MENTOR, OPD's optional reward term
    values: torch.Tensor | None = None  # regression: V̂(x) of the rollout's prompt


def iteration_targets(df: pd.DataFrame, spec: RunSpec, objective: Objective,
                      iteration: int = 0) -> Targets:
    """Rewards, and the advantages or values the objective declares, from raw rewards:
    computed at train time, never stored with the rollouts."""
    return Targets(
        rewards_of(df),
        advantages=objective.advantages(df, spec, iteration) if objective.advantages else None,
        values=objective.values(df, spec, iteration) if objective.values else None)


def reference_pass(engine, micro: list[MicroBatch], spec: RunSpec, objective: Objective,
                   device: str, ref_model=None, const_c: float | None = None,
                   teacher_model=None, df: pd.DataFrame | None = None,
                   targets: Targets | None = None) -> dict:
    """Log-probs of π_t (= π_old) with the exact packing of the training pass, so the first
    ratio is 1 and Proxy's step-0 residual is exactly −(r − V̂); and what the objective
    needs: the anchor of each rollout, the KL reference's log-probs (while kl_coef > 0), the
    teacher's log-probs on the sampled tokens (also the teacher-vs-policy KL on samples,
    logged whenever a teacher is given). The Const anchor without a ``const_c`` measures c by
    the stability rule (``stability_c``: needs ``df`` and ``targets``; ``out["const_c"]``)."""
    objective = as_objective(objective)
    if "teacher_logprobs" in objective.needs and teacher_model is None:
        raise ValueError("the objective needs the teacher's log-probs: pass teacher_model")
    out = {"old": [], "ref": [], "anchor": [], "teacher": [], "entropy": 0.0, "tokens": 0.0,
           "int_logprob_sum": 0.0, "int_tokens": 0.0, "teacher_kl_sum": 0.0,
           "teacher_kl_tokens": 0.0}
    anchor_fn = get_anchor(spec.anchor) if "anchor_logprobs" in objective.needs else None
    with_ref = "ref_logprobs" in objective.needs and spec.kl_coef > 0
    engine.module.eval()
    with torch.no_grad():
        for mb in micro:
            lp, ent = forward_logprobs(engine.module, mb, device, with_entropy=True)
            out["old"].append(lp)
            out["entropy"] += float(ent.sum())
            out["tokens"] += float(mb.response_mask.sum())
            inter = mb.intervention.to(device) * mb.response_mask.to(device)
            out["int_logprob_sum"] += float((lp * inter).sum())
            out["int_tokens"] += float(inter.sum())
            if with_ref:
                out["ref"].append(forward_logprobs(ref_model, mb, device)[0])
            if teacher_model is not None:
                t = forward_logprobs(teacher_model, mb, device)[0]
                out["teacher"].append(t)
                # KL(π_t ‖ π_I) is estimated on what π_t sampled: not on MENTOR's guided rows
                own = (mb.response_mask * (1 - mb.guided)[:, None]).to(device)
                out["teacher_kl_sum"] += float(((lp - t) * own).sum())
                out["teacher_kl_tokens"] += float(own.sum())
    if anchor_fn is not None:
        if spec.anchor == "const" and const_c is None and spec.const_c_rule == "stability":
            if targets is None or df is None:
                raise ValueError("the stability rule measures c: pass df and targets")
            const_c = stability_c(df, out["int_logprob_sum"], out["int_tokens"],
                                  targets.rewards - targets.values, spec.beta2,
                                  spec.const_bonus, device)
            out["const_c"] = const_c
        for mb, lp in zip(micro, out["old"], strict=True):
            inter = mb.intervention.to(device) * mb.response_mask.to(device)
            out["anchor"].append(anchor_fn(lp, mb.generator_logprobs.to(device), inter,
                                           mb.response_mask.to(device), c=const_c))
    return out


def as_objective(objective: str | Objective) -> Objective:
    return get_objective(objective) if isinstance(objective, str) else objective


def loss_mask(mb: MicroBatch, objective: Objective) -> torch.Tensor:
    """(b, T) the tokens a token-level loss averages over: the response tokens, or the
    intervention tokens (the corrections-only control)."""
    if objective.over == "intervention":
        return mb.response_mask * mb.intervention
    return mb.response_mask


def loss_inputs(objective: Objective, lp: torch.Tensor, mb: MicroBatch, j: int, ref: dict,
                targets: Targets, device: str, token_total: float,
                rollout_total: int) -> LossInputs:
    """The objective's inputs on micro-batch ``j``: only the fields it needs are filled."""
    needs = objective.needs

    def rows(t: torch.Tensor | None) -> torch.Tensor | None:
        return None if t is None else t[mb.rows].to(device)

    def of(key: str, name: str) -> torch.Tensor | None:
        return ref[key][j] if name in needs and ref[key] else None

    return LossInputs(
        logprobs=lp, mask=loss_mask(mb, objective).to(device), token_total=token_total,
        rollout_total=rollout_total, old_logprobs=of("old", "old_logprobs"),
        ref_logprobs=of("ref", "ref_logprobs"), teacher_logprobs=of("teacher", "teacher_logprobs"),
        anchor_logprobs=of("anchor", "anchor_logprobs"),
        rewards=rows(targets.rewards) if "rewards" in needs else None,
        advantages=rows(targets.advantages) if "advantages" in needs else None,
        values=rows(targets.values) if "values" in needs else None)


def train_iteration(engine, df: pd.DataFrame, spec: RunSpec, objective: str | Objective,
                    pad_id: int,
                    seed: int, device: str = "cpu", ref_model=None,
                    const_c: float | None = None, teacher_model=None,
                    iteration: int = 0) -> dict[str, float]:
    """Optimise on one iteration's rollouts; returns ``losses/…``, ``policy/…``, ``time/…``
    (and ``distill/teacher_kl`` when a teacher is given).

    ``objective``: a registered name ("grpo", "regression", "opd", ...) or an
    :class:`~mintrl.algo.objectives.Objective`; ``const_c``: the
    Const anchor's per-intervention-token log-prob; ``teacher_model``: the teacher scoring the
    sampled tokens (OPD needs it); ``iteration``: for schedules (MENTOR's guided weight).
    """
    t0 = time.perf_counter()
    objective = as_objective(objective)
    targets = iteration_targets(df, spec, objective, iteration)
    # every rank holds the whole table and draws the same plan; each trains on its share
    plans = plan_minibatches(len(df), spec, seed)
    rows_per_mini = [sum(len(m) for m in mini) for mini in plans]
    plans = [rank_share(mini, spec.micro_batch_size) for mini in plans]
    micro = [pack(df, rows, pad_id) for mini in plans for rows in mini]
    ref = reference_pass(engine, micro, spec, objective, device, ref_model, const_c,
                         teacher_model, df, targets)
    t_parts = time.perf_counter()
    measure = spec.diagnosed(iteration)
    with diagnostic():  # logged, not part of the method's update (nor of its cost)
        parts = (first_minibatch_parts(engine, micro, len(plans[0]), rows_per_mini[0],
                                       objective, ref, targets, spec, df, device)
                 if spec.gradient_parts and measure else {})
    t1 = time.perf_counter()

    engine.module.train()
    stats = {"loss": [], "grad_norm": [], "clip": 0.0, "kl": 0.0, "tokens": 0.0}
    k = 0
    for mini, mb_rows in zip(plans, rows_per_mini, strict=True):
        mb_tokens = sum_floats([sum(float(loss_mask(micro[k + j], objective).sum())
                                    for j in range(len(mini)))], device)[0]
        mb_loss = 0.0
        for j in range(len(mini)):
            mb = micro[k + j]
            engine.set_gradient_accumulation_boundary(j == len(mini) - 1)
            lp, _ = forward_logprobs(engine, mb, device)
            loss, st = objective.loss(loss_inputs(objective, lp, mb, k + j, ref, targets,
                                                  device, mb_tokens, mb_rows), spec)
            engine.backward(loss * loss_scale() if world() > 1 else loss)
            mb_loss += loss.item()
            stats["clip"] += st.get("clip_frac", 0.0)
            stats["kl"] += st.get("kl", 0.0)
        grad_norm = _grad_norm_before_step(engine)
        engine.step()
        if grad_norm is None:  # ZeRO computes it inside step()
            grad_norm = float(engine.get_global_grad_norm() or 0.0)
        k += len(mini)
        stats["loss"].append(mb_loss)
        stats["grad_norm"].append(grad_norm)
        stats["tokens"] += mb_tokens
    t2 = time.perf_counter()
    with diagnostic():
        moved = update_stats(engine, micro, ref, df, spec, device,
                             lambda m, mb: forward_logprobs(m, mb, device)[0],
                             targets) if measure else {}
    out = iteration_stats(stats, ref, len(plans), device) | parts | moved | {
        "time/old_logprobs": t_parts - t0, "time/gradient_parts": t1 - t_parts,
        "time/update": t2 - t1, "time/update_stats": time.perf_counter() - t2}
    if "const_c" in ref:
        out["intervention/const_c"] = ref["const_c"]
    if targets.advantages is not None:
        out["policy/advantage_abs"] = float(targets.advantages.abs().mean())
    if ref["anchor"]:
        out |= step0_residuals(df, micro, ref, targets, spec)
    return out


def first_minibatch_parts(engine, micro, first: int, rows: int, objective: Objective, ref: dict,
                          targets: Targets, spec: RunSpec, df: pd.DataFrame,
                          device: str) -> dict[str, float]:
    """``gradient_parts`` of the first minibatch's first micro-batch, with the loss as the
    minibatch's optimizer step sees it (``first`` micro-batches, ``rows`` rollouts); nothing
    when the iteration's rollouts are of one part only (GRPO, OPD, an on-policy phase)."""
    if "kind" not in df or df["kind"].nunique() < 2:
        return {}
    tokens = sum(float(loss_mask(micro[j], objective).sum()) for j in range(first))

    def loss_of(lp, j):
        return objective.loss(loss_inputs(objective, lp, micro[j], j, ref, targets, device,
                                          tokens, rows), spec)[0]

    return gradient_parts(engine, micro, 1, loss_of, df,
                          lambda m, mb: forward_logprobs(m, mb, device)[0])


def iteration_stats(stats: dict, ref: dict, steps: int, device: str) -> dict[str, float]:
    """What an iteration logs of its optimisation (``stats``: per minibatch loss and grad
    norm, summed clip and KL counts and tokens) and of its reference pass; summed over the
    ranks first, which each saw their share."""
    if world() > 1:
        stats["loss"] = sum_floats(stats["loss"], device)
        stats["clip"], stats["kl"] = sum_floats([stats["clip"], stats["kl"]], device)
        keys = ["entropy", "tokens", "int_logprob_sum", "int_tokens", "teacher_kl_sum",
                "teacher_kl_tokens"]
        ref |= dict(zip(keys, sum_floats([ref[k] for k in keys], device), strict=True))
    out = {
        "losses/loss": float(np.mean(stats["loss"])),
        "losses/grad_norm": float(np.mean(stats["grad_norm"])),
        "losses/clip_frac": stats["clip"] / max(stats["tokens"], 1.0),
        "losses/kl": stats["kl"] / max(stats["tokens"], 1.0),
        "losses/optimizer_steps": float(steps),
        "policy/entropy": ref["entropy"] / max(ref["tokens"], 1.0),
    }
    if ref["int_tokens"]:
        out["intervention/policy_logprob"] = ref["int_logprob_sum"] / ref["int_tokens"]
    if ref["teacher"]:
        # k1 estimate of KL(π_t ‖ π_I) per token on the sampled tokens
        out["distill/teacher_kl"] = ref["teacher_kl_sum"] / max(ref["teacher_kl_tokens"], 1.0)
    return out


def step0_residuals(df, micro, ref, targets: Targets, spec: RunSpec) -> dict[str, float]:
    """Mean |residual| at θ = π_t per rollout kind: β₂(Σ log π_t − anchor) − (r − V̂)."""
    res = torch.zeros(len(df), dtype=torch.float64 if world() > 1 else torch.float32)
    for mb, old, anchor in zip(micro, ref["old"], ref["anchor"], strict=True):
        seq = old.sum(-1).cpu()
        res[mb.rows] = (spec.beta2 * (seq - anchor.cpu())
                        - (targets.rewards[mb.rows] - targets.values[mb.rows])).to(res.dtype)
    if world() > 1:  # each rank filled its own rows
        res = sum_tensor(res.to(ref["old"][0].device)).cpu().float()
    out = {"losses/residual0_abs": float(res.abs().mean())}
    for kind in sorted(set(df["kind"])):
        sel = torch.tensor((df["kind"] == kind).to_numpy())
        out[f"losses/residual0_abs_{kind}"] = float(res[sel].abs().mean())
    return out


def _grad_norm_before_step(engine) -> float | None:
    """Global grad norm before clipping; None under ZeRO, whose partitioned grads only the
    engine can reduce (it reports the norm after ``step``)."""
    if engine.zero_optimization_stage() > 0:
        return None
    sq = [p.grad.detach().float().pow(2).sum() for p in engine.module.parameters()
          if p.grad is not None]
    return float(torch.stack(sq).sum().sqrt()) if sq else 0.0
