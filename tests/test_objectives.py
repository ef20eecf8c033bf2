import math

import pytest
import torch

from mintrl.algo.advantages import get_advantage, grpo_advantages
from mintrl.algo.objectives import get_objective, grpo_loss, register_objective


def test_grpo_advantages_hand_computed():
    rewards = torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 1.0])
    group = torch.tensor([0, 0, 0, 0, 1, 1])
    adv = grpo_advantages(rewards, group, eps=0.0)
    # group 0: mean 0.25, unbiased std sqrt(0.25) = 0.5 -> (1-0.25)/0.5, (0-0.25)/0.5
    assert adv[:4].tolist() == pytest.approx([1.5, -0.5, -0.5, -0.5])
    assert adv[4:].tolist() == [0.0, 0.0]  # all correct: no signal


def test_grpo_advantages_match_a_per_group_loop():
    g = torch.Generator().manual_seed(0)
    rewards = torch.randint(0, 2, (40,), generator=g).float()
    group = torch.randint(0, 7, (40,), generator=g)
    adv = grpo_advantages(rewards, group, eps=1e-6)
    for gid in group.unique():
        r = rewards[group == gid]
        want = (r - r.mean()) / ((r.std() if len(r) > 1 else torch.tensor(0.0)) + 1e-6)
        assert torch.allclose(adv[group == gid], want, atol=1e-5)


def test_grpo_loss_hand_computed_with_clipping():
    # one sequence of two tokens, advantage +1; token 0 ratio e^0.5 (clipped at 1.2), token 1
    # ratio 1; loss = -(1.2 + 1) / 2 tokens.
    lp = torch.tensor([[0.5, 0.0]])
    old = torch.tensor([[0.0, 0.0]])
    loss, stats = grpo_loss(lp, old, torch.tensor([1.0]), torch.ones(1, 2), clip_eps=0.2)
    assert loss.item() == pytest.approx(-(1.2 + 1.0) / 2)
    assert stats["clip_frac"] == 1.0  # one token clipped (a count; the trainer divides)
    # negative advantage: the unclipped (larger) penalty is kept: -min(ρA, clip(ρ)A)
    loss, _ = grpo_loss(lp, old, torch.tensor([-1.0]), torch.ones(1, 2), clip_eps=0.2)
    assert loss.item() == pytest.approx((math.exp(0.5) + 1.0) / 2)


def test_grpo_loss_ignores_padding_and_divides_by_the_minibatch_tokens():
    lp = torch.zeros(2, 3)
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]])
    adv = torch.tensor([1.0, -1.0])
    loss, _ = grpo_loss(lp, lp, adv, mask)
    assert loss.item() == pytest.approx(-(2 * 1.0 - 1.0) / 3)
    half, _ = grpo_loss(lp, lp, adv, mask, token_total=6)  # a micro-batch of a larger step
    assert half.item() == pytest.approx(loss.item() / 2)


def test_grpo_gradient_raises_the_logprob_of_positive_advantage_tokens():
    lp = torch.zeros(2, 2, requires_grad=True)
    loss, _ = grpo_loss(lp, lp.detach(), torch.tensor([1.0, -1.0]), torch.ones(2, 2))
    loss.backward()
    assert (lp.grad[0] < 0).all() and (lp.grad[1] > 0).all()  # descent: row 0 up, row 1 down


def test_k3_kl_is_zero_at_the_reference_and_positive_elsewhere():
    lp = torch.tensor([[-1.0, -2.0]])
    mask = torch.ones(1, 2)
    _, at_ref = grpo_loss(lp, lp, torch.zeros(1), mask, kl_coef=0.1, ref_logprobs=lp)
    _, away = grpo_loss(lp, lp, torch.zeros(1), mask, kl_coef=0.1, ref_logprobs=lp - 0.5)
    assert at_ref["kl"] == pytest.approx(0.0) and away["kl"] > 0
    with pytest.raises(ValueError, match="ref_logprobs"):
        grpo_loss(lp, lp, torch.zeros(1), mask, kl_coef=0.1)


def test_registries_name_the_known_entries_and_refuse_duplicates():
    with pytest.raises(KeyError, match="unknown objective 'ppo'; known: .*'grpo'.*'regression'"):
        get_objective("ppo")
    with pytest.raises(KeyError, match="grpo"):
        get_advantage("rloo")
    with pytest.raises(ValueError, match="already registered"):
        register_objective("grpo", get_objective("grpo"))
