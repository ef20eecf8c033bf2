"""The paper's other baselines (docs/design.md §1.3): OPD, MENTOR and SFT+GRPO's SFT loss."""

import numpy as np
import pandas as pd
import pytest
import torch

from mintrl.algo.advantages import get_advantage, mentor_advantages
from mintrl.algo.objectives import LossInputs, get_objective, opd_loss, sft_loss
from mintrl.config import ModelArch, RunSpec
from mintrl.engine.base import Sampling
from mintrl.engine.mixed import MixedPolicySampler, mix, mixing_weights, shared_vocab_check
from mintrl.models import build_model
from mintrl.training.batching import pack
from mintrl.training.trainer import deepspeed_engine, forward_logprobs, train_iteration

ARCH = ModelArch(hidden_size=32, intermediate_size=64, num_layers=1, num_heads=2,
                 num_kv_heads=1, max_positions=128)


# --- OPD -------------------------------------------------------------------------------------
def test_opd_moves_tokens_toward_the_teacher():
    """The sign: a sampled token the teacher prefers more than the policy goes up, one it
    prefers less goes down, after one gradient step on free logits."""
    torch.manual_seed(0)
    logits = torch.zeros(1, 2, 5, requires_grad=True)  # (B, T, V): two positions, uniform
    tokens = torch.tensor([[1, 3]])
    old = torch.log_softmax(logits.detach(), -1).gather(-1, tokens[..., None]).squeeze(-1)
    teacher = old + torch.tensor([[+1.0, -1.0]])  # likes token 1 at t0, dislikes token 3 at t1
    lp = torch.log_softmax(logits, -1).gather(-1, tokens[..., None]).squeeze(-1)
    loss, stats = opd_loss(lp, old, teacher, torch.ones(1, 2))
    loss.backward()
    with torch.no_grad():
        new = torch.log_softmax(logits - 1.0 * logits.grad, -1).gather(
            -1, tokens[..., None]).squeeze(-1)
    assert new[0, 0] > old[0, 0]  # preferred by the teacher: up
    assert new[0, 1] < old[0, 1]  # dispreferred: down
    assert stats["reverse_kl"] == pytest.approx(0.0)  # +1 and -1 cancel in the k1 sum


def test_opd_advantage_is_detached_and_matches_the_formula():
    lp = torch.tensor([[-1.0, -2.0]], requires_grad=True)
    old = lp.detach().clone()
    teacher = torch.tensor([[-0.5, -3.0]])
    loss, _ = opd_loss(lp, old, teacher, torch.ones(1, 2), distill_weight=2.0)
    loss.backward()
    # ratio 1 at θ = π_old, so ∂L/∂lp_k = -A_k / n with A = 2 (log π_I − log π_old)
    assert lp.grad[0].tolist() == pytest.approx([-(2 * 0.5) / 2, -(2 * -1.0) / 2])
    # the registered objective calls that function on the trainer's inputs
    spec = RunSpec(method="opd", distill_weight=2.0)
    x = LossInputs(lp, torch.ones(1, 2), 2.0, 1, old_logprobs=old, teacher_logprobs=teacher,
                   advantages=torch.zeros(1))
    assert get_objective("opd").loss(x, spec)[0] == loss


def test_opd_without_a_teacher_is_a_clear_error(tokenizer):
    df = _rollouts()
    spec = RunSpec(method="opd", minibatch_size=8, micro_batch_size=4, group_size=4)
    engine = deepspeed_engine(build_model(ARCH, tokenizer, seed=0), spec)
    with pytest.raises(ValueError, match="teacher"):
        train_iteration(engine, df, spec, "opd", tokenizer.pad_token_id, seed=0)


def test_opd_iterations_close_the_gap_to_the_teacher(tokenizer):
    """Through the trainer: OPD iterations bring the policy's log-probs of the sampled tokens
    toward the teacher's, and the logged teacher KL is the k1 mean of log π_t − log π_I."""
    df = _rollouts()
    pad = tokenizer.pad_token_id
    spec = RunSpec(method="opd", lr=3e-3, minibatch_size=8, micro_batch_size=8, group_size=4)
    teacher = build_model(ARCH, tokenizer, seed=7).eval()
    engine = deepspeed_engine(build_model(ARCH, tokenizer, seed=0), spec)

    def gap():
        mb = pack(df, np.arange(len(df)), pad)
        with torch.no_grad():
            lp, _ = forward_logprobs(engine.module, mb, "cpu")
            t, _ = forward_logprobs(teacher, mb, "cpu")
        n = mb.response_mask.sum()
        return float((lp - t).abs().sum() / n), float((lp - t).sum() / n)

    before, k1 = gap()
    stats = train_iteration(engine, df, spec, "opd", pad, seed=0, teacher_model=teacher)
    assert stats["distill/teacher_kl"] == pytest.approx(k1, abs=1e-4)
    for i in range(4):
        train_iteration(engine, df, spec, "opd", pad, seed=i + 1, teacher_model=teacher)
    assert gap()[0] < 0.7 * before


def test_a_teacher_with_another_vocabulary_is_refused(tokenizer):
    import copy

    shared_vocab_check(tokenizer, tokenizer, "opd")  # same vocabulary: fine
    other = copy.deepcopy(tokenizer)
    other.add_tokens(["<extra>"])
    with pytest.raises(ValueError, match="opd needs the teacher to share the policy's vocab"):
        shared_vocab_check(tokenizer, other, "opd")


# --- MENTOR ----------------------------------------------------------------------------------
def test_mentor_advantages_hand_computed():
    rewards = torch.tensor([1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0])
    group = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])
    guided = torch.tensor([0, 0, 1, 1, 0, 0, 1, 1])
    adv = mentor_advantages(rewards, group, guided, weight=0.5, eps=0.0)
    # prompt 0 on-policy [1, 0]: mean 0.5, std 0.707 -> ±0.707; guided: 0.5·max(r − 0.5, 0)
    assert adv[:2].tolist() == pytest.approx([0.7071, -0.7071], abs=1e-4)
    assert adv[2:4].tolist() == pytest.approx([0.0, 0.25])
    # prompt 1 on-policy [0, 0]: no signal; a correct guided sample gets 0.5·(1 − 0)
    assert adv[4:].tolist() == pytest.approx([0.0, 0.0, 0.5, 0.0])
    assert get_advantage("mentor") is mentor_advantages


def test_mentor_guided_weight_decays_to_zero_then_no_guided_samples():
    spec = RunSpec(method="mentor", iterations=10, intervention_iterations=4)
    assert [spec.guided_weight(t) for t in range(1, 7)] == [1.0, 0.75, 0.5, 0.25, 0.0, 0.0]
    assert [spec.rollout_mode_at(t) for t in (4, 5)] == ["mixed-policy", "on-policy"]
    assert [spec.objective_at(t) for t in (4, 5)] == ["mentor", "grpo"]
    with pytest.raises(ValueError, match="n_guided"):
        RunSpec(method="mentor", group_size=4, n_guided=4)


def test_mixing_weights_and_the_mixture():
    assert mixing_weights(torch.tensor([0.0, 0.5, 1.0, 3.0]), tau=1.0).tolist() == \
        [0.0, 0.5, 1.0, 1.0]
    s, t = torch.tensor([[2.0, 0.0, 0.0]]), torch.tensor([[0.0, 0.0, 2.0]])
    sampling = Sampling(max_new_tokens=1)
    for a in (0.0, 0.3, 1.0):
        p = mix(s, t, torch.tensor([a]), sampling)
        want = (1 - a) * torch.softmax(s, -1) + a * torch.softmax(t, -1)
        assert torch.allclose(p, want) and p.sum().item() == pytest.approx(1.0)


def test_mixed_sampling_follows_p_prime(tokenizer):
    """Batched first-token frequencies match p' = p_s + α(p_T − p_s) at α from H/τ."""
    student = build_model(ARCH, tokenizer, seed=0).eval()
    teacher = build_model(ARCH, tokenizer, seed=3).eval()
    with torch.no_grad():  # a peaked teacher: its favourite token stands out
        teacher.lm_head.weight.mul_(20.0)
    prompt = tokenizer("1+2", add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        s = student(input_ids=torch.tensor([prompt])).logits[0, -1].float()
        t = teacher(input_ids=torch.tensor([prompt])).logits[0, -1].float()
    h = -(torch.softmax(s, -1) * torch.log_softmax(s, -1)).sum()
    tau = float(h) * 2  # α = 0.5
    want = 0.5 * torch.softmax(s, -1) + 0.5 * torch.softmax(t, -1)
    sampler = MixedPolicySampler(student, teacher, tokenizer.eos_token_id,
                                 tokenizer.pad_token_id, batch_size=4000)
    n = 4000
    gen = sampler.generate([prompt] * n, Sampling(max_new_tokens=1, seed=0), tau)
    counts = np.bincount([g[0] for g in gen.token_ids], minlength=len(want)) / n
    assert np.abs(counts - want.numpy()).max() < 0.03
    assert gen.alphas[0][0] == pytest.approx(0.5, abs=1e-4)
    top = int(t.argmax())
    # the teacher's favourite token is attributed to the teacher, with the mixture's log-prob
    i = next(k for k, g in enumerate(gen.token_ids) if g[0] == top)
    assert gen.guided[i] == [1]
    assert gen.logprobs[i][0] == pytest.approx(float(torch.log(want[top])), abs=1e-4)


def test_mixed_sampling_with_tau_huge_is_the_student(tokenizer):
    """α ≈ 0: the same seed draws what the student alone would, and nothing is guided."""
    from mintrl.engine.transformers_engine import TransformersEngine

    student = build_model(ARCH, tokenizer, seed=0).eval()
    teacher = build_model(ARCH, tokenizer, seed=3).eval()
    prompts = [tokenizer(p, add_special_tokens=False)["input_ids"] for p in ("1+2", "7*3=")]
    sampling = Sampling(max_new_tokens=12, seed=5)
    mixed = MixedPolicySampler(student, teacher, tokenizer.eos_token_id,
                               tokenizer.pad_token_id).generate(prompts, sampling, tau=1e12)
    plain = TransformersEngine(student, tokenizer.eos_token_id,
                               tokenizer.pad_token_id).generate(prompts, sampling)
    assert mixed.token_ids == plain.token_ids
    assert all(g == 0 for row in mixed.guided for g in row)
    assert np.allclose(sum(mixed.logprobs, []), sum(plain.logprobs, []), atol=1e-4)


# --- SFT -------------------------------------------------------------------------------------
def test_sft_loss_is_the_token_mean_nll():
    lp = torch.tensor([[-1.0, -2.0, 0.0], [-4.0, 0.0, 0.0]])
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]])
    loss, stats = sft_loss(lp, mask)
    assert loss.item() == pytest.approx(7.0 / 3)
    loss, _ = sft_loss(lp, mask, token_total=7.0)  # accumulates to the minibatch mean
    assert loss.item() == pytest.approx(1.0)
    assert stats["nll_sum"] == pytest.approx(7.0)


def test_sft_train_fits_the_trajectories(tokenizer):
    from mintrl.config import SFTSpec
    from mintrl.training.sft import sft_train

    df = _rollouts(n_prompts=2, group=2)
    spec = SFTSpec(epochs=6, lr=3e-3, minibatch_size=4, micro_batch_size=2)
    engine = deepspeed_engine(build_model(ARCH, tokenizer, seed=0), RunSpec(), lr=spec.lr)
    pad = tokenizer.pad_token_id
    before = _mean_logprob(engine.module, df, pad)
    stats = sft_train(engine, df, spec, pad, seed=0)
    assert stats["sft/optimizer_steps"] == 6
    assert stats["sft/final_loss"] < stats["sft/first_loss"]
    assert _mean_logprob(engine.module, df, pad) > before + 0.5


def _mean_logprob(model, df, pad):
    mb = pack(df, np.arange(len(df)), pad)
    with torch.no_grad():
        lp, _ = forward_logprobs(model, mb, "cpu")
    return float(lp.sum() / mb.response_mask.sum())


def _rollouts(n_prompts=2, group=4, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(n_prompts):
        prompt = rng.integers(3, 20, size=6).tolist()
        for s in range(group):
            resp = rng.integers(3, 20, size=int(rng.integers(4, 9))).tolist()
            rows.append({"problem_id": f"p{p}", "prompt_ids": prompt, "response_ids": resp,
                         "reward": float(s < 2), "kind": "on-policy"})
    return pd.DataFrame(rows)


# --- corrections-only control ----------------------------------------------------------------
def test_corrections_only_trains_on_intervention_tokens_and_ignores_rewards(tokenizer):
    """Only intervention tokens move (toward likelier), whatever the rewards say; the policy's
    own tokens carry no gradient."""
    from mintrl.algo.objectives import corrections_loss

    lp = torch.tensor([[-1.0, -2.0, -3.0]], requires_grad=True)
    inter = torch.tensor([[0.0, 1.0, 1.0]])
    loss, _ = corrections_loss(lp, inter)
    loss.backward()
    assert loss.item() == pytest.approx(2.5)
    assert lp.grad[0].tolist() == pytest.approx([0.0, -0.5, -0.5])

    df = _rollouts()
    df["kind"] = ["control", "control", "semi", "semi"] * 2
    df["provenance"] = [[1 if k == "semi" and i % 2 else 0 for i in range(len(r))]
                        for k, r in zip(df["kind"], df["response_ids"], strict=True)]
    df["logprobs"] = df["response_ids"].map(lambda r: [0.0] * len(r))
    spec = RunSpec(method="corrections_only", lr=3e-3, minibatch_size=8, micro_batch_size=4)
    assert spec.objective_at(1) == "corrections" and spec.rollout_mode_at(1) == "semi-on-policy"
    pad = tokenizer.pad_token_id

    def mean_lp(model, data):  # mean log-prob of the intervention tokens
        mb = pack(data, np.arange(len(data)), pad)
        with torch.no_grad():
            lp, _ = forward_logprobs(model, mb, "cpu")
        m = mb.response_mask * mb.intervention
        return float((lp * m).sum() / m.sum())

    runs = []
    for rewards in ([1.0] * 8, [0.0] * 8):  # the same update whatever the rewards
        engine = deepspeed_engine(build_model(ARCH, tokenizer, seed=0), spec)
        before = mean_lp(engine.module, df)
        train_iteration(engine, df.assign(reward=rewards), spec, "corrections", pad, seed=0)
        runs.append(mean_lp(engine.module, df))
    assert runs[0] > before + 0.1
    assert runs[0] == pytest.approx(runs[1], abs=1e-6)
