"""MInTRL: values, anchors, the advantage-regression loss, and semi-on-policy rollouts."""

import math

import numpy as np
import pandas as pd
import pytest
import torch

from mintrl.algo.advantages import control_values
from mintrl.algo.anchors import const_anchor, get_anchor, intervener_anchor, proxy_anchor
from mintrl.algo.objectives import advantage_regression_loss
from mintrl.config import ModelArch, RunSpec
from mintrl.models import build_model
from mintrl.schemas import INTERVENTION, POLICY
from mintrl.training.batching import pack
from mintrl.training.trainer import deepspeed_engine, reference_pass, train_iteration


def test_values_come_from_control_rollouts_only():
    rewards = torch.tensor([1.0, 0.0, 1.0, 1.0, 0.0, 1.0])
    group = torch.tensor([0, 0, 0, 1, 1, 1])
    control = torch.tensor([True, True, False, False, True, False])
    v = control_values(rewards, group, control)
    # prompt 0: controls 1, 0 -> 0.5 (the semi rollout's 1 is ignored); prompt 1: control 0
    assert v.tolist() == [0.5, 0.5, 0.5, 0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="no control rollout"):
        control_values(rewards, group, torch.tensor([True, True, True, False, False, False]))


def test_soft_value_limits_are_the_mean_and_the_max():
    rewards = torch.tensor([1.0, 0.0, 0.0, 0.0])
    group = torch.zeros(4, dtype=torch.long)
    control = torch.ones(4, dtype=torch.bool)
    big = control_values(rewards, group, control, beta1=1e4)
    small = control_values(rewards, group, control, beta1=1e-3)
    one = control_values(rewards, group, control, beta1=1.0)
    assert big[0].item() == pytest.approx(0.25, abs=1e-4)  # β₁ → ∞: mean
    assert small[0].item() == pytest.approx(1.0, abs=2e-3)  # β₁ → 0: max
    assert one[0].item() == pytest.approx(math.log((math.e + 3) / 4), abs=1e-6)


def test_regression_loss_hand_computed():
    seq = torch.tensor([-10.0, -20.0])
    anchor = torch.tensor([-12.0, -20.0])
    loss, _ = advantage_regression_loss(seq, anchor, torch.tensor([1.0, 0.0]),
                                        torch.tensor([0.5, 0.5]), beta2=0.1)
    # residuals: 0.1*2 - 0.5 = -0.3 ; 0 - (-0.5) = 0.5 -> mean of squares 0.17
    assert loss.item() == pytest.approx((0.09 + 0.25) / 2)
    half, _ = advantage_regression_loss(seq, anchor, torch.tensor([1.0, 0.0]),
                                        torch.tensor([0.5, 0.5]), beta2=0.1, n_total=4)
    assert half.item() == pytest.approx(loss.item() / 2)


def _tokens():
    old = torch.tensor([[-0.1, -2.0, -3.0, 0.0], [-0.2, -0.3, -0.4, -0.5]])
    gen = torch.tensor([[-0.1, -0.05, -0.02, 0.0], [-0.2, -0.3, -0.4, -0.5]])
    inter = torch.tensor([[0.0, 1.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0]])
    return old, gen, inter, mask


def test_proxy_and_const_differ_only_through_intervention_tokens():
    old, gen, inter, mask = _tokens()
    proxy, const = proxy_anchor(old, gen, inter, mask), const_anchor(old, gen, inter, mask, c=-1.0)
    assert proxy.tolist() == pytest.approx([-5.1, -1.4])
    assert const.tolist() == pytest.approx([-0.1 - 2.0, -1.4])  # 2 tokens at c = -1
    assert intervener_anchor(old, gen, inter, mask).tolist() == pytest.approx([-0.17, -1.4])
    with pytest.raises(ValueError, match="needs c"):
        get_anchor("const")(old, gen, inter, mask)


ARCH = ModelArch(hidden_size=32, intermediate_size=64, num_layers=1, num_heads=2,
                 num_kv_heads=1, max_positions=128)


def _rollouts(rng_seed=0):
    """One prompt: two control rollouts (rewards 1, 0) and two semi ones, both intervened."""
    rng = np.random.default_rng(rng_seed)
    prompt = rng.integers(3, 90, size=5).tolist()
    rows = []
    for s, (kind, reward) in enumerate([("control", 1.0), ("control", 0.0), ("semi", 1.0),
                                        ("semi", 0.0)]):
        resp = rng.integers(3, 90, size=8).tolist()
        prov = [POLICY] * 8 if kind == "control" else [POLICY] * 4 + [INTERVENTION] * 4
        rows.append({"problem_id": "p", "sample": s, "kind": kind, "prompt_ids": prompt,
                     "response_ids": resp, "provenance": prov, "logprobs": [-0.01] * 8,
                     "reward": reward})
    return pd.DataFrame(rows)


def test_proxy_residual_at_the_current_policy_is_exactly_minus_the_advantage(tokenizer):
    df = _rollouts()
    spec = RunSpec(method="mintrl", anchor="proxy", beta2=0.05, minibatch_size=4,
                   micro_batch_size=2)
    engine = deepspeed_engine(build_model(ARCH, tokenizer, seed=0), spec)
    stats = train_iteration(engine, df, spec, "regression", tokenizer.pad_token_id, seed=0)
    # V̂ = 0.5 from the controls: |r - V̂| = 0.5 for every rollout, exactly
    assert stats["losses/residual0_abs"] == 0.5
    assert stats["losses/residual0_abs_semi"] == 0.5


@pytest.mark.parametrize("c,reward,direction", [
    (0.0, 0.0, +1),   # c above log π_t: an intervened rollout rises despite advantage -0.5
    (-30.0, 1.0, -1),  # c far below log π_t: it falls despite advantage +0.5
])
def test_a_step_moves_each_log_prob_to_shrink_its_residual(tokenizer, c, reward, direction):
    df = _rollouts()
    df.loc[2, "reward"] = reward
    df = df.iloc[[0, 1, 2]].reset_index(drop=True)  # controls + one intervened rollout
    spec = RunSpec(method="mintrl", anchor="const", beta2=0.05, lr=1e-3, minibatch_size=4,
                   micro_batch_size=4)
    engine = deepspeed_engine(build_model(ARCH, tokenizer, seed=0), spec)
    pad = tokenizer.pad_token_id
    mb = pack(df, np.arange(3), pad)
    before = reference_pass(engine, [mb], spec, "regression", "cpu", const_c=c)
    seq0 = before["old"][0].sum(-1)
    v = 0.5
    residual0 = spec.beta2 * (seq0 - before["anchor"][0]) - (torch.tensor(df["reward"]) - v)
    train_iteration(engine, df, spec, "regression", pad, seed=0, const_c=c)
    seq1 = reference_pass(engine, [mb], spec, "regression", "cpu", const_c=c)["old"][0].sum(-1)
    moved = seq1 - seq0
    # gradient descent on r²: log π moves against the sign of the residual
    assert (torch.sign(moved) == -torch.sign(residual0)).all()
    assert torch.sign(moved[2]).item() == direction
