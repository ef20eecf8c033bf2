"""DeepSpeed (CPU backend) training steps on a tiny Qwen3 model."""

import numpy as np
import pandas as pd
import pytest
import torch

from mintrl.algo.objectives import grpo_loss
from mintrl.config import ModelArch, RunSpec
from mintrl.models import build_model
from mintrl.training.batching import pack
from mintrl.training.trainer import (
    deepspeed_engine,
    forward_logprobs,
    load_optimizer_state,
    save_optimizer_state,
    train_iteration,
)

ARCH = ModelArch(hidden_size=32, intermediate_size=64, num_layers=1, num_heads=2,
                 num_kv_heads=1, max_positions=128)
SPEC = RunSpec(lr=3e-3, minibatch_size=8, micro_batch_size=4, group_size=4)


def rollouts(n_prompts=2, group=4, seed=0):
    """Random responses; in each group the first two are 'correct'."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(n_prompts):
        prompt = rng.integers(3, 90, size=6).tolist()
        for s in range(group):
            resp = rng.integers(3, 90, size=int(rng.integers(4, 9))).tolist()
            rows.append({"problem_id": f"p{p}", "prompt_ids": prompt, "response_ids": resp,
                         "reward": float(s < 2)})
    return pd.DataFrame(rows)


def seq_logprobs(model, df, pad):
    mb = pack(df, np.arange(len(df)), pad)
    with torch.no_grad():
        lp, _ = forward_logprobs(model, mb, "cpu")
    return lp, mb.response_mask


def test_a_deepspeed_iteration_lowers_the_grpo_loss(tokenizer):
    df = rollouts()
    engine = deepspeed_engine(build_model(ARCH, tokenizer, seed=0), SPEC)
    pad = tokenizer.pad_token_id
    old, mask = seq_logprobs(engine.module, df, pad)
    adv = torch.tensor([1.0, 1.0, -1.0, -1.0] * 2)
    before, _ = grpo_loss(old, old, adv, mask, clip_eps=10.0)
    stats = train_iteration(engine, df, SPEC, "grpo", pad, seed=0)
    new, _ = seq_logprobs(engine.module, df, pad)
    after, _ = grpo_loss(new, old, adv, mask, clip_eps=10.0)
    assert after.item() < before.item()
    gained = ((new - old) * mask).sum(1)  # (B,) change of log π(y|x)
    assert (gained[adv > 0] > 0).all() and (gained[adv < 0] < 0).all()
    assert stats["losses/optimizer_steps"] == 1.0 and stats["losses/grad_norm"] > 0


def test_groups_without_signal_leave_the_weights_unchanged(tokenizer):
    df = rollouts()
    df["reward"] = 1.0  # every rollout correct: zero advantages
    engine = deepspeed_engine(build_model(ARCH, tokenizer, seed=0), SPEC)
    w0 = [p.detach().clone() for p in engine.module.parameters()]
    train_iteration(engine, df, SPEC, "grpo", tokenizer.pad_token_id, seed=0)
    assert all(torch.equal(a, b) for a, b in zip(w0, engine.module.parameters(), strict=True))


def test_optimizer_state_carries_across_processes_exactly(tokenizer, tmp_path):
    """Iteration 2 after save/load equals iteration 2 in one process (Adam moments kept)."""
    pad, objective = tokenizer.pad_token_id, "grpo"
    a = deepspeed_engine(build_model(ARCH, tokenizer, seed=0), SPEC)
    train_iteration(a, rollouts(seed=1), SPEC, objective, pad, seed=1)
    save_optimizer_state(a, tmp_path / "optim", iteration=1)
    train_iteration(a, rollouts(seed=2), SPEC, objective, pad, seed=2)

    b = deepspeed_engine(build_model(ARCH, tokenizer, seed=5), SPEC)  # other weights
    assert load_optimizer_state(b, tmp_path / "optim") == 1
    train_iteration(b, rollouts(seed=2), SPEC, objective, pad, seed=2)
    for pa, pb in zip(a.module.parameters(), b.module.parameters(), strict=True):
        assert torch.equal(pa, pb)

    fresh = deepspeed_engine(build_model(ARCH, tokenizer, seed=0), SPEC)
    train_iteration(fresh, rollouts(seed=1), SPEC, objective, pad, seed=1)
    train_iteration(fresh, rollouts(seed=2), SPEC, objective, pad, seed=2)  # same path...
    c = deepspeed_engine(build_model(ARCH, tokenizer, seed=0), SPEC)
    train_iteration(c, rollouts(seed=1), SPEC, objective, pad, seed=1)
    c.optimizer.state.clear()  # ...but with the Adam moments dropped: not the same weights
    train_iteration(c, rollouts(seed=2), SPEC, objective, pad, seed=2)
    assert any(not torch.equal(x, y) for x, y in
               zip(fresh.module.parameters(), c.module.parameters(), strict=True))


def test_missing_optimizer_state_is_a_clear_error(tokenizer, tmp_path):
    engine = deepspeed_engine(build_model(ARCH, tokenizer, seed=0), SPEC)
    with pytest.raises(FileNotFoundError, match="no DeepSpeed checkpoint"):
        load_optimizer_state(engine, tmp_path / "nothing")


def _trained_weights(tokenizer, tmp_path, name, **deepspeed):
    """One GRPO iteration from the same start and data, saved with the project's saver."""
    from transformers import AutoModelForCausalLM

    from mintrl.training.trainer import save_policy

    spec = SPEC.model_copy(update={"deepspeed": SPEC.deepspeed.model_copy(update=deepspeed)})
    engine = deepspeed_engine(build_model(ARCH, tokenizer, seed=0), spec)
    stats = train_iteration(engine, rollouts(), spec, "grpo", tokenizer.pad_token_id, seed=0)
    save_policy(engine, tokenizer, tmp_path / name)
    model = AutoModelForCausalLM.from_pretrained(tmp_path / name, dtype="float32")
    return stats, {k: v.clone() for k, v in model.state_dict().items()}


def test_gradient_checkpointing_and_zero3_train_the_same_weights(tokenizer, tmp_path):
    """Recomputed activations, ZeRO-2's partitioned gradients (the GPU default) and weights
    sharded by ZeRO-3 (gathered again to save) change nothing a user would see: the same loss,
    and a saved model equal to the plain one's."""
    ref_stats, ref = _trained_weights(tokenizer, tmp_path, "plain")
    for name, ds in (("checkpointed", {"gradient_checkpointing": True}),
                     ("zero2", {"zero_stage": 2}), ("zero3", {"zero_stage": 3})):
        stats, got = _trained_weights(tokenizer, tmp_path, name, **ds)
        assert stats["losses/loss"] == pytest.approx(ref_stats["losses/loss"], abs=1e-6), name
        assert got.keys() == ref.keys()
        for k in ref:
            assert torch.allclose(got[k], ref[k], atol=1e-6), (name, k)
        assert any(not torch.equal(ref[k], build_model(ARCH, tokenizer, seed=0).state_dict()[k])
                   for k in ref)  # the iteration did move the weights


def test_deepspeed_joins_a_one_process_group_made_before_it(tmp_path):
    """vLLM makes a one-process torch.distributed group before the trainer's DeepSpeed engine
    exists; the engine must still start (DeepSpeed asserts on LOCAL_RANK)."""
    import os
    import subprocess
    import sys

    code = f"""
import torch.distributed as dist
dist.init_process_group("gloo", init_method="file://{tmp_path / 'store'}", rank=0, world_size=1)
from mintrl.config import ModelArch, RunSpec
from mintrl.models import build_model
from mintrl.tokenizer import build_char_tokenizer
from mintrl.training.trainer import deepspeed_engine
arch = ModelArch(hidden_size=32, intermediate_size=64, num_layers=1, num_heads=2,
                 num_kv_heads=1, max_positions=64)
engine = deepspeed_engine(build_model(arch, build_char_tokenizer(), seed=0), RunSpec())
print("ready", engine.zero_optimization_stage())
"""
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, env=env)
    assert res.returncode == 0 and "ready" in res.stdout, res.stderr[-2000:]
