"""What an iteration logs of its update (issue 25): how far the policy moved, whether the
regression's quadratic acted, the gradient's parts, and the Const anchor's stability rule."""

import numpy as np
import pandas as pd
import pytest
import torch

from mintrl.config import ModelArch, RunSpec
from mintrl.models import build_model
from mintrl.schemas import INTERVENTION, POLICY
from mintrl.training.diagnostics import stability_c
from mintrl.training.trainer import deepspeed_engine, train_iteration

ARCH = ModelArch(hidden_size=32, intermediate_size=64, num_layers=1, num_heads=2,
                 num_kv_heads=1, max_positions=128)


def _rollouts(n_prompts=2, seed=0):
    """Per prompt two control rollouts (rewards 1, 0) and two semi ones (4 policy tokens then
    4 intervention tokens), rewards 1 and 0."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(n_prompts):
        prompt = rng.integers(3, 90, size=5).tolist()
        for s, (kind, reward) in enumerate([("control", 1.0), ("control", 0.0),
                                            ("semi", 1.0), ("semi", 0.0)]):
            prov = [POLICY] * 8 if kind == "control" else [POLICY] * 4 + [INTERVENTION] * 4
            rows.append({"problem_id": f"p{p}", "sample": s, "kind": kind,
                         "prompt_ids": prompt, "response_ids": rng.integers(3, 90, 8).tolist(),
                         "provenance": prov, "logprobs": [-0.01] * 8, "reward": reward})
    return pd.DataFrame(rows)


def _train(tokenizer, lr, beta2=0.5, objective="regression", iteration=0, weights=None, **kw):
    spec = RunSpec(method="mintrl", anchor="proxy", beta2=beta2, lr=lr, minibatch_size=8,
                   micro_batch_size=4, **kw)
    engine = deepspeed_engine(build_model(ARCH, tokenizer, seed=0), spec)
    stats = train_iteration(engine, _rollouts(), spec, objective, tokenizer.pad_token_id, seed=0,
                            iteration=iteration)
    if weights is not None:  # the updated policy, for comparing two updates bit for bit
        weights.update({k: v.detach().clone() for k, v in engine.module.state_dict().items()})
    return stats


def test_the_update_is_measured_against_the_policy_it_started_from(tokenizer):
    still = _train(tokenizer, lr=1e-12)
    moved = _train(tokenizer, lr=3e-3)
    # Proxy at θ = π_t: the residual is exactly −(r − V̂), so the ratio starts at 1
    assert still["regression/residual_ratio_start"] == pytest.approx(1.0)
    assert still["regression/residual_ratio_end"] == pytest.approx(1.0, abs=1e-4)
    assert still["update/kl_per_token"] == pytest.approx(0.0, abs=1e-8)
    assert moved["update/kl_per_token"] > 1e-4
    # the update shrinks the regression's residual: its quadratic acted
    assert moved["regression/residual_ratio_end"] < 0.95
    assert moved["regression/beta2_move_ratio"] > 0.05
    assert {"update/delta_logprob_control", "update/delta_logprob_semi",
            "update/delta_logprob_semi_intervention"} <= set(moved)


def test_gradient_parts_split_the_rollouts_and_their_shares_add_to_one(tokenizer):
    stats = _train(tokenizer, lr=1e-4)
    shares = {k: v for k, v in stats.items() if k.startswith("grad/share_")}
    assert set(shares) == {"grad/share_control", "grad/share_semi_policy",
                           "grad/share_semi_intervention"}
    assert sum(shares.values()) == pytest.approx(1.0)
    assert all(v > 0 for v in shares.values())
    # the corrections-only control's loss reads intervention tokens only
    only = _train(tokenizer, lr=1e-4, objective="corrections")
    assert only["grad/share_semi_intervention"] == pytest.approx(1.0)
    assert only["grad/norm_control"] == 0.0
    off = _train(tokenizer, lr=1e-4, gradient_parts=False)
    assert not any(k.startswith("grad/") for k in off)


def test_the_update_is_measured_every_few_iterations_and_the_weights_do_not_depend_on_it(
        tokenizer):
    """diagnostics_every 4 measures iterations 1, 5, 9, ...: iteration 2 logs no
    diagnostics, and its update is the same, bit for bit, as one measured every iteration."""
    spec = RunSpec(method="mintrl", diagnostics_every=4)
    assert [t for t in range(1, 13) if spec.diagnosed(t)] == [1, 5, 9]
    assert RunSpec(method="mintrl", diagnostics_every=1).diagnosed(2)
    sparse, dense = {}, {}
    quiet = _train(tokenizer, lr=3e-3, iteration=2, diagnostics_every=4, weights=sparse)
    every = _train(tokenizer, lr=3e-3, iteration=2, diagnostics_every=1, weights=dense)
    measured = _train(tokenizer, lr=3e-3, iteration=5, diagnostics_every=4)
    keys = ("update/", "regression/residual_ratio", "regression/beta2_move", "grad/")
    assert not any(k.startswith(keys) for k in quiet)
    assert {"update/kl_per_token", "grad/share_control"} <= set(every) & set(measured)
    assert quiet["losses/loss"] == every["losses/loss"]
    assert all(torch.equal(sparse[k], dense[k]) for k in dense)


def test_the_stability_rule_sets_the_const_bonus_to_a_share_of_the_advantage():
    df = _rollouts(n_prompts=1)  # 2 intervened rollouts of 4 intervention tokens each
    adv = torch.tensor([0.5, -0.5, 0.5, -0.5])
    # π_t gives the corrections -3 nats per token: c - (-3) = 0.5 * 0.5 / (0.5 * 4)
    c = stability_c(df, int_logprob_sum=-24.0, int_tokens=8.0, advantages=adv, beta2=0.5,
                    bonus=0.5, device="cpu")
    assert c == pytest.approx(-3.0 + 0.125)
    assert 0.5 * 4 * (c + 3.0) == pytest.approx(0.5 * 0.5)  # β₂·n_int·(c − log π_t)
    # a small β₂ would put c above 0: capped, a log-prob
    assert stability_c(df, -24.0, 8.0, adv, beta2=0.01, bonus=0.5, device="cpu") == 0.0
    with pytest.raises(ValueError, match="no intervention tokens"):
        stability_c(df.assign(provenance=[[POLICY] * 8] * 4), 0.0, 0.0, adv, 0.5, 0.5, "cpu")


def test_the_const_anchor_measures_c_in_the_first_iteration(tokenizer):
    spec = RunSpec(method="mintrl", anchor="const", beta2=0.5, lr=1e-4, minibatch_size=8,
                   micro_batch_size=4)
    engine = deepspeed_engine(build_model(ARCH, tokenizer, seed=0), spec)
    stats = train_iteration(engine, _rollouts(), spec, "regression", tokenizer.pad_token_id,
                            seed=0)
    c = stats["intervention/const_c"]
    # the bonus over π_t's own log-prob of the corrections is a quarter of a nat per rollout
    bonus = spec.beta2 * 4 * (c - stats["intervention/policy_logprob"])
    assert bonus == pytest.approx(spec.const_bonus * stats["regression/adv_abs"], rel=1e-4)
