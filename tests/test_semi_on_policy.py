"""Semi-on-policy rollouts: chunked decoding with a kept KV cache, oracle judge, corrections."""

import numpy as np
import pytest
import torch

from mintrl.engine.base import Sampling
from mintrl.engine.chunked import ChunkedDecoder
from mintrl.intervention.interveners import ModelIntervener, ReferenceIntervener
from mintrl.intervention.judges import OracleJudge
from mintrl.intervention.semi_on_policy import Intensity, cut_token, semi_on_policy_rollouts
from mintrl.schemas import INTERVENTION, POLICY
from mintrl.tasks import get_task
from mintrl.training.logprobs import response_logprobs


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


def test_a_cut_without_a_splice_and_a_sync_resume_from_what_was_kept(tiny_model, tokenizer):
    """After a cut the next token follows the last kept token (not the dropped one); ``sync``
    to a different response, and a cut back to the bare prompt, resume exactly as teacher
    forcing says; rows not asked to decode are left as they were."""
    prompts = [tokenizer(t, add_special_tokens=False)["input_ids"]
               for t in ("123 +4\n", "9 *3 -1 +2\n", "7 -7\n")]
    dec = ChunkedDecoder(tiny_model, prompts, tokenizer.eos_token_id, tokenizer.pad_token_id,
                         Sampling(max_new_tokens=40), torch.Generator().manual_seed(1))
    first = dec.generate({0: 6, 1: 6, 2: 6})
    dec.cut(0, 3)  # no splice: row 0 resumes after its 3rd token
    other = tokenizer("5 +5", add_special_tokens=False)["input_ids"]
    dec.sync({1: first[1][0][:2] + other})  # row 1: keep 2 tokens, then someone else's
    dec.cut(2, 6)  # row 2: back to its bare prompt
    second = dec.generate({0: 5, 1: 5, 2: 5})
    resp = [first[0][0][:3] + second[0][0], first[1][0][:2] + other + second[1][0],
            second[2][0]]
    want = response_logprobs(tiny_model, prompts, resp, tokenizer.pad_token_id)
    assert first[0][1][:3] + second[0][1] == pytest.approx(want[0], abs=1e-4)
    assert second[1][1] == pytest.approx(want[1][-len(second[1][1]):], abs=1e-4)
    assert second[2][1] == pytest.approx(want[2], abs=1e-4)
    assert dec.generate({0: 0}) == {0: ([], [])}
    third = dec.generate({2: 3})  # only row 2 decodes; the others keep their state
    assert set(third) == {2}
    fourth = dec.generate({0: 2})
    want0 = response_logprobs(tiny_model, prompts[:1], [resp[0] + fourth[0][0]],
                              tokenizer.pad_token_id)[0]
    assert fourth[0][1] == pytest.approx(want0[-len(fourth[0][1]):], abs=1e-4)


def test_a_row_fed_for_the_first_time_joins_rows_with_a_cache(tiny_model, tokenizer):
    """A prompt is encoded at its row's first ``generate`` (an intervener's decoder never
    encodes rows it never corrects): a row's first call may share its batch with a row that
    has a cache and a correction pending, and both continue as teacher forcing says."""
    prompts = [tokenizer(t, add_special_tokens=False)["input_ids"]
               for t in ("123 +4\n", "9 *3 -1 +2\n", "7 -7\n")]
    dec = ChunkedDecoder(tiny_model, prompts, tokenizer.eos_token_id, tokenizer.pad_token_id,
                         Sampling(max_new_tokens=40), torch.Generator().manual_seed(2))
    first = dec.generate({1: 4})  # rows 0 and 2 are not encoded yet
    splice = tokenizer("ab\n\n", add_special_tokens=False)["input_ids"]
    dec.append({1: splice})
    second = dec.generate({0: 5, 1: 5})  # row 0's prompt and row 1's splice in one batch
    resp = [second[0][0], first[1][0] + splice + second[1][0]]
    want = response_logprobs(tiny_model, prompts[:2], resp, tokenizer.pad_token_id)
    assert second[0][1] == pytest.approx(want[0], abs=1e-4)
    assert second[1][1] == pytest.approx(want[1][-len(second[1][1]):], abs=1e-4)


def test_the_cached_intervener_writes_what_re_encoding_writes(tiny_model, tokenizer):
    """The intervener's session (its KV cache kept across rounds): its corrections' log-probs
    are the intervener's own on prompt + retained prefix, and with a confident intervener
    (argmax far ahead: no sampling noise) it writes the same rollouts as re-encoding."""
    from mintrl.config import ModelArch
    from mintrl.models import build_model

    arch = ModelArch(hidden_size=32, intermediate_size=64, num_layers=2, num_heads=2,
                     num_kv_heads=1, max_positions=256)
    teacher = build_model(arch, tokenizer, seed=1).eval()
    problems = _problems(5)
    sampling = Sampling(max_new_tokens=60, seed=3)
    me = ModelIntervener(_engine(teacher, tokenizer), tokenizer, tokenizer)
    trajs, _ = semi_on_policy_rollouts(tiny_model, tokenizer, problems, OracleJudge(), me,
                                       Intensity(6, 4, 5), sampling)
    assert sum(len(t.corrections) for t in trajs) >= 6
    ids = tokenizer([p.prompt for p in problems], add_special_tokens=False)["input_ids"]
    own = response_logprobs(teacher, ids, [t.tokens for t in trajs], tokenizer.pad_token_id)
    for t, lps in zip(trajs, own, strict=True):
        for prov, got, want in zip(t.provenance, t.logprobs, lps, strict=True):
            if prov == INTERVENTION:
                assert got == pytest.approx(want, abs=1e-4)

    confident = build_model(arch, tokenizer, seed=1).eval()
    head = torch.nn.Linear(arch.hidden_size, len(tokenizer), bias=False)
    head.weight = torch.nn.Parameter(confident.lm_head.weight.detach().clone() * 60)
    confident.lm_head = head  # untied and sharpened: its top token has all the mass
    runs = {}
    for cached in (True, False):
        me = ModelIntervener(_engine(confident, tokenizer), tokenizer, tokenizer)
        runs[cached], _ = semi_on_policy_rollouts(
            tiny_model, tokenizer, problems, OracleJudge(), me, Intensity(6, 4, 5), sampling,
            use_intervener_cache=cached)
    assert sum(len(t.corrections) for t in runs[True]) >= 6
    for a, b in zip(runs[True], runs[False], strict=True):
        assert a.tokens == b.tokens and a.provenance == b.provenance
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)


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
    assert set(times) == {"generate", "judge", "intervene", "tokens/policy_sampled",
                          "tokens/intervener", "corrections/written", "corrections/wrong"}
    assert times["corrections/written"] == sum(len(t.corrections) for t in trajs)
    assert times["corrections/wrong"] == 0  # a clean intervener
    kept = [sum(p == prov for t in trajs for p in t.provenance) for prov in (POLICY, INTERVENTION)]
    assert times["tokens/policy_sampled"] > kept[0]  # cut tokens were decoded too
    assert times["tokens/intervener"] >= kept[1]  # a later review may cut into one


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
    from mintrl.intervention.judges import LikelihoodJudge
    from mintrl.rollouts import judge_agreement

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
    from mintrl.rollouts import semi_rows

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
