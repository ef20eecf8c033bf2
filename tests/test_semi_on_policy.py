"""Semi-on-policy rollouts: chunked decoding with a kept KV cache, oracle judge, corrections."""

import numpy as np
import pytest
import torch

from mintrl.engine.base import Sampling
from mintrl.engine.chunked import ChunkedDecoder
from mintrl.interveners import ModelIntervener, ReferenceIntervener
from mintrl.judges import OracleJudge
from mintrl.logprobs import response_logprobs
from mintrl.schemas import INTERVENTION, POLICY
from mintrl.semi_on_policy import Intensity, cut_token, semi_on_policy_rollouts
from mintrl.tasks import get_task


def test_cut_append_and_resume_match_a_fresh_forward(tiny_model, tokenizer):
    """Log-probs sampled after a masked cut and a spliced block equal teacher forcing."""
    prompts = [tokenizer("123 +4\n", add_special_tokens=False)["input_ids"],
               tokenizer("9 *3 -1 +2\n", add_special_tokens=False)["input_ids"]]
    gen = torch.Generator().manual_seed(0)
    dec = ChunkedDecoder(tiny_model, prompts, tokenizer.eos_token_id, tokenizer.pad_token_id,
                         Sampling(max_new_tokens=40), gen)
    first = dec.generate({0: 6, 1: 6})
    dec.cut(0, 4)  # keep 2 tokens of row 0
    splice = tokenizer("ab\n\n", add_special_tokens=False)["input_ids"]
    dec.append({0: splice})
    second = dec.generate({0: 5, 1: 5})
    resp0 = first[0][0][:2] + splice + second[0][0]
    resp1 = first[1][0] + second[1][0]
    want = response_logprobs(tiny_model, prompts, [resp0, resp1], tokenizer.pad_token_id)
    got0 = first[0][1][:2] + [None] * len(splice) + second[0][1]
    for w, g in zip(want[0], got0, strict=True):
        if g is not None:
            assert g == pytest.approx(w, abs=1e-4)
    assert first[1][1] + second[1][1] == pytest.approx(want[1], abs=1e-4)


def _problems(n=6, difficulty=3):
    task = get_task("arith")
    rng = np.random.default_rng(0)
    return [task.sample(rng, difficulty) for _ in range(n)]


def test_an_ideal_intervener_makes_every_intervened_rollout_correct(tiny_model, tokenizer):
    problems = _problems()
    trajs, times = semi_on_policy_rollouts(
        tiny_model, tokenizer, problems, OracleJudge(), ReferenceIntervener(tokenizer),
        Intensity(chunk_tokens=8, max_reviews=2, correction_tokens=200),
        Sampling(max_new_tokens=120, seed=0))
    texts = [tokenizer.decode(t.tokens, skip_special_tokens=True) for t in trajs]
    rewards = get_task("arith").rewards(problems, texts)
    for t, r in zip(trajs, rewards, strict=True):
        assert len(t.tokens) == len(t.provenance) == len(t.logprobs)
        assert t.reviews <= 2 and len(t.corrections) <= t.reviews
        if t.corrections:  # the random policy errs at once; the reference corrects to the end
            assert r == 1.0 and t.finish_reason == "stop"
    assert any(t.corrections for t in trajs)
    assert set(times) == {"generate", "judge", "intervene"}


def test_cuts_fall_at_step_starts_and_corrections_respect_l(tiny_model, tokenizer):
    problems = _problems(8, 4)
    L = 5
    trajs, _ = semi_on_policy_rollouts(
        tiny_model, tokenizer, problems, OracleJudge(),
        ModelIntervener(_engine(tiny_model, tokenizer), tokenizer, tokenizer),
        Intensity(chunk_tokens=6, max_reviews=3, correction_tokens=L),
        Sampling(max_new_tokens=60, seed=1))
    for t in trajs:
        assert all(c <= L for c in t.corrections)
        # a correction follows a cut at a step start: the kept text ends with a step
        # separator (or is empty when the first step was wrong)
        for i in range(len(t.provenance)):
            if t.provenance[i] == INTERVENTION and (i == 0 or t.provenance[i - 1] == POLICY):
                before = tokenizer.decode(t.tokens[:i], skip_special_tokens=True)
                assert before == "" or before.endswith("\n\n"), repr(before)
    assert sum(len(t.corrections) for t in trajs) >= len(trajs)  # the cuts did happen


def _engine(model, tokenizer):
    from mintrl.engine.transformers_engine import TransformersEngine

    return TransformersEngine(model, tokenizer.eos_token_id, tokenizer.pad_token_id)


def test_cut_token_reaches_the_character_offset(tokenizer):
    ids = tokenizer("12+3=15\n\nanswer", add_special_tokens=False)["input_ids"]
    assert cut_token(tokenizer, ids, 9) == 9  # one character per token here
    assert cut_token(tokenizer, ids, 0) == 0


def test_a_model_judge_is_scored_against_the_oracle_per_review(tiny_model, tokenizer):
    from mintrl.judges import LikelihoodJudge
    from mintrl.rollout import judge_agreement

    problems = _problems(4)
    trajs, stats = semi_on_policy_rollouts(
        tiny_model, tokenizer, problems, LikelihoodJudge(tiny_model, tokenizer, threshold=-3.0),
        ReferenceIntervener(tokenizer), Intensity(8, 2, 200), Sampling(max_new_tokens=80),
        check_with_oracle=True)
    assert stats["agreement/reviews"] == sum(t.reviews for t in trajs) > 0
    metrics = judge_agreement(stats)
    assert 0 <= metrics["judge/precision_any"] <= 1 and 0 <= metrics["judge/recall_any"] <= 1
    assert metrics["judge/precision_exact"] <= metrics["judge/precision_any"]


def test_self_intervention_sees_the_reference_but_the_stored_prompt_stays_plain(tiny_model,
                                                                                tokenizer):
    from mintrl.rollout import semi_rows

    problems = _problems(3)
    me = ModelIntervener(_engine(tiny_model, tokenizer), tokenizer, tokenizer, privileged=True)
    seen = me.prompt_texts(problems, ["12"] * 3)
    assert all(s.startswith("Reference solution:\n" + p.solution) and s.endswith(p.prompt + "12")
               for s, p in zip(seen, problems, strict=True))
    trajs, _ = semi_on_policy_rollouts(tiny_model, tokenizer, problems, OracleJudge(), me,
                                       Intensity(8, 2, 8), Sampling(max_new_tokens=40))
    ids = tokenizer([p.prompt for p in problems], add_special_tokens=False)["input_ids"]
    rows = semi_rows(trajs, tokenizer, ids, "mintrl-self", 1, 0, 1)
    assert [tokenizer.decode(list(x)) for x in rows["prompt_ids"]] == [p.prompt for p in problems]
    assert "Reference" not in " ".join(rows["text"])
