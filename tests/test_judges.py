"""Judges and interveners: oracle, teacher likelihood, noisy ablation wrappers, agreement."""

import math
import re

import numpy as np

from mintrl.engine.base import Sampling
from mintrl.intervention.interveners import (
    Correction,
    NoisyIntervener,
    ReferenceIntervener,
    wrong_digits,
)
from mintrl.intervention.judges import LikelihoodJudge, NoisyJudge, OracleJudge, Verdict, agreement
from mintrl.tasks import get_task


def _problem():
    return get_task("arith").sample(np.random.default_rng(3), 3)


def test_oracle_judge_names_the_earliest_wrong_step_and_its_start():
    p = _problem()
    steps = p.solution.split("\n\n")
    text = steps[0] + "\n\n" + "999+1=000\n\n" + steps[2]
    (v,) = OracleJudge().review([p], [text], [0], [False])
    assert v.first_wrong == 1 and text[v.cut:].startswith("999+1")
    (ok,) = OracleJudge().review([p], [p.solution], [0], [False])
    assert ok.first_wrong is None


def test_likelihood_judge_flags_a_step_the_model_finds_improbable(tiny_model, tokenizer):
    p = _problem()
    # a random model gives every token about log(1/99) = -4.6
    (strict,) = LikelihoodJudge(tiny_model, tokenizer, threshold=-3.0).review(
        [p], [p.solution], [0], [True])
    (lenient,) = LikelihoodJudge(tiny_model, tokenizer, threshold=-30.0).review(
        [p], [p.solution], [0], [True])
    assert strict.first_wrong == 0 and strict.cut == 0
    assert lenient.first_wrong is None
    # steps before `reviewed_from` were accepted earlier and are not reviewed again
    second = p.solution.index("\n\n") + 2
    (later,) = LikelihoodJudge(tiny_model, tokenizer, threshold=-3.0).review(
        [p], [p.solution], [second], [True])
    assert later.first_wrong == 1


def test_noisy_judge_misses_and_false_alarms_at_their_rates():
    p = _problem()
    wrong = p.solution.replace(p.solution.split("\n\n")[1], "999+1=000", 1)
    missed = NoisyJudge(OracleJudge(), miss_rate=1.0, false_alarm_rate=0.0)
    assert missed.review([p], [wrong], [0], [True])[0].first_wrong is None
    alarmed = NoisyJudge(OracleJudge(), miss_rate=0.0, false_alarm_rate=1.0)
    second = p.solution.index("\n\n") + 2
    v = alarmed.review([p], [p.solution], [second], [True])[0]
    assert v.first_wrong is not None and v.first_wrong >= 1  # only reviewed steps
    assert p.solution[v.cut:] != p.solution  # cut at a step start inside the text


def test_agreement_counts_any_and_exact_hits_against_the_oracle():
    judged = [Verdict(2, 10), Verdict(1, 5), Verdict(None, None), Verdict(3, 20)]
    oracle = [Verdict(2, 10), Verdict(2, 10), Verdict(1, 5), Verdict(None, None)]
    c = agreement(judged, oracle, [0, 0, 0, 0])
    assert c == {"reviews": 4, "positive": 3, "flagged": 3, "tp_any": 2, "tp_exact": 1}


def test_noisy_intervener_replaces_corrections_with_random_tokens(tokenizer):
    p = _problem()
    inner = ReferenceIntervener(tokenizer)
    sampling = Sampling(max_new_tokens=8)
    clean = inner.correct([p], [""], [8], sampling)[0]
    noisy = NoisyIntervener(inner, tokenizer, rate=1.0, kind="random").correct(
        [p], [""], [8], sampling)[0]
    assert isinstance(noisy, Correction) and len(noisy.token_ids) == len(clean.token_ids)
    assert noisy.token_ids != clean.token_ids and all(math.isnan(x) for x in noisy.logprobs)
    assert noisy.wrong and not clean.wrong
    assert tokenizer.decode(clean.token_ids) == p.solution[:8]


def test_a_wrong_correction_is_the_right_step_with_another_value(tokenizer):
    """The default wrong correction keeps the step's form and changes its last number, so the
    policy reads a plausible step with a wrong value (a wrong fact or result)."""
    p = _problem()
    inner = ReferenceIntervener(tokenizer)
    sampling = Sampling(max_new_tokens=12)
    clean = tokenizer.decode(inner.correct([p], [""], [12], sampling)[0].token_ids)
    fix = NoisyIntervener(inner, tokenizer, rate=1.0).correct([p], [""], [12], sampling)[0]
    wrong = tokenizer.decode(fix.token_ids)
    assert fix.wrong and len(wrong) == len(clean) and wrong != clean
    differs = [i for i, (a, b) in enumerate(zip(clean, wrong, strict=True)) if a != b]
    last = list(re.finditer(r"[0-9]+", clean))[-1]
    assert all(last.start() <= i < last.end() for i in differs)
    assert all(clean[i] != wrong[i] for i in range(last.start(), last.end()))
    assert wrong_digits("no digits here", np.random.default_rng(0)) is None
    # at rate 0.25, about a quarter of 400 corrections are wrong
    noisy = NoisyIntervener(inner, tokenizer, rate=0.25, seed=3)
    marks = [f.wrong for f in noisy.correct([p] * 400, [""] * 400, [12] * 400, sampling)]
    assert 0.18 < np.mean(marks) < 0.32


def _reversed_char_tokenizer():
    """A tokenizer with the same characters under other ids (a different vocabulary)."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    from mintrl.tokenizer import CHARS, SPECIAL_TOKENS

    vocab = {t: i for i, t in enumerate(SPECIAL_TOKENS + CHARS[::-1])}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    core.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", eos_token="<eos>",
                                   unk_token="<unk>", padding_side="left")


def test_a_correction_from_another_vocabulary_crosses_as_text(tiny_model, tokenizer):
    from mintrl.engine.transformers_engine import TransformersEngine
    from mintrl.intervention.interveners import ModelIntervener

    other = _reversed_char_tokenizer()
    engine = TransformersEngine(tiny_model, other.eos_token_id, other.pad_token_id)
    p = _problem()
    sampling = Sampling(max_new_tokens=10, seed=4)
    (fix,) = ModelIntervener(engine, other, tokenizer).correct([p], ["12"], [10], sampling)
    raw = engine.generate(other([p.prompt + "12"], add_special_tokens=False)["input_ids"],
                          sampling).token_ids[0]
    text = other.decode(raw, skip_special_tokens=True)
    assert tokenizer.decode(fix.token_ids, skip_special_tokens=True) == text
    assert fix.token_ids != raw[: len(fix.token_ids)] or not raw
    assert all(math.isnan(x) for x in fix.logprobs)  # its log-probs are not the policy's


def test_make_judge_builds_each_configured_judge_and_names_the_known_ones(tiny_model, tokenizer):
    import pytest

    from mintrl.engine.transformers_engine import TransformersEngine
    from mintrl.intervention.chat_policies import ChatJudge
    from mintrl.intervention.policies import make_judge

    engine = TransformersEngine(tiny_model, tokenizer.eos_token_id, tokenizer.pad_token_id)
    assert isinstance(make_judge("oracle"), OracleJudge)
    assert isinstance(make_judge("likelihood", engine, tokenizer), LikelihoodJudge)
    assert isinstance(make_judge("chat", engine, tokenizer), ChatJudge)
    with pytest.raises(ValueError, match="needs a model"):
        make_judge("likelihood")
    with pytest.raises(KeyError, match="known: \\['oracle', 'likelihood', 'chat'\\]"):
        make_judge("gpt")
