"""Which judge and intervener a run uses (MInTRL's Algorithm 2.1, docs/design.md §1.1): built from
its spec, with the teacher's or the policy's engine."""

from __future__ import annotations

from mintrl.intervention.chat_policies import ChatIntervener, ChatJudge
from mintrl.intervention.interveners import ModelIntervener, NoisyIntervener
from mintrl.intervention.judges import JUDGES, Judge, LikelihoodJudge, NoisyJudge, OracleJudge


def make_judge(name: str, engine=None, tokenizer=None, threshold: float = -4.0) -> Judge:
    """The judge named in the config; ``likelihood`` and ``chat`` need the teacher's engine
    and tokenizer."""
    if name == "oracle":
        return OracleJudge()
    if name not in JUDGES:
        raise KeyError(f"unknown judge {name!r}; known: {list(JUDGES)}")
    if engine is None:
        raise ValueError(f"the {name} judge needs a model (the teacher)")
    if name == "likelihood":
        return LikelihoodJudge(engine.model, tokenizer, threshold)
    return ChatJudge(engine, tokenizer)


def intervention_policies(spec, sampler, tokenizer, teacher, tok, first: int):
    """Judge and intervener for a segment starting in a semi-on-policy phase (MInTRL and its
    corrections-only control), else None."""
    if spec.rollout_mode_at(first) != "semi-on-policy":
        return None, None
    judge = make_judge(spec.judge, teacher, tok, spec.judge_threshold)
    if spec.judge_miss_rate or spec.judge_false_alarm_rate:
        judge = NoisyJudge(judge, spec.judge_miss_rate, spec.judge_false_alarm_rate, first)
    if spec.intervener == "self":  # the policy itself, given the reference solution
        intervener = ModelIntervener(sampler, tokenizer, tokenizer, privileged=True)
    elif spec.intervener == "chat":
        intervener = ChatIntervener(teacher, tok, tokenizer)
    elif spec.intervener == "self_chat":  # the policy prompted as the intervener
        intervener = ChatIntervener(sampler, tokenizer, tokenizer)
    else:
        intervener = ModelIntervener(teacher, tok, tokenizer)
    if spec.wrong_correction_rate:
        intervener = NoisyIntervener(intervener, tokenizer, spec.wrong_correction_rate, first,
                                     spec.wrong_correction)
    return judge, intervener
