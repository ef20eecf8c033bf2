"""Judges: given a (partial) response, name the earliest wrong step among those under review.

One interface, several implementations (docs/design.md §1.1). The oracle judge reads the task's step
oracle; model judges (teacher likelihood, prompted chat LLM) implement the same ``review``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from mintrl.prompting import encode_prompts
from mintrl.steps import split_steps
from mintrl.tasks import Problem, get_task


@dataclass(frozen=True)
class Verdict:
    """``first_wrong``: index of the earliest wrong step of the response (None: no error);
    ``cut``: character offset where that step starts (the response is cut there);
    ``parsed``: False when a model's answer could not be read (a counted "no verdict")."""

    first_wrong: int | None
    cut: int | None
    parsed: bool = True


class Judge(Protocol):
    def review(self, problems: list[Problem], responses: list[str], reviewed_from: list[int],
               finished: list[bool]) -> list[Verdict]:
        """Review the steps of each response that start at or after ``reviewed_from`` (the
        start of the prefix's unfinished step), in the context of the text before it."""


class OracleJudge:
    """The task's step oracle as judge: exact, free, the embedded default."""

    def review(self, problems, responses, reviewed_from, finished):
        out = []
        for p, text, done in zip(problems, responses, finished, strict=True):
            v = get_task(p.task).oracle(p, text, finished=done)
            steps = split_steps(text)
            if v.first_wrong is None or v.first_wrong >= len(steps):
                out.append(Verdict(None, None))
                continue
            # Steps before `reviewed_from` were accepted earlier; the oracle is deterministic,
            # so an earlier wrong step can only be the prefix's unfinished one, which is under
            # review again (a cut there also removes the tail of the prefix).
            cut = steps[v.first_wrong].start
            out.append(Verdict(v.first_wrong, max(cut, 0)))
        return out


def first_reviewed_step(text: str, reviewed_from: int) -> int:
    """Index of the first step under review (the step that contains ``reviewed_from``)."""
    for j, st in enumerate(split_steps(text)):
        if st.end >= reviewed_from:
            return j
    return len(split_steps(text))


class LikelihoodJudge:
    """A model judge that needs no judge training: the teacher's per-step likelihood.

    A reviewed step is wrong when some token of it is improbable under the teacher
    (log-prob below ``threshold``) given the prompt and the text before it. Works with any
    causal LM that shares the policy's tokenizer.
    """

    def __init__(self, model, tokenizer, threshold: float = -4.0, batch_size: int = 64):
        self.model, self.tok, self.threshold, self.batch_size = model, tokenizer, threshold, \
            batch_size

    def review(self, problems, responses, reviewed_from, finished):
        from mintrl.training.logprobs import response_logprobs

        prompts = encode_prompts(self.tok, problems)
        ids = self.tok(list(responses), add_special_tokens=False)["input_ids"]
        scores = response_logprobs(self.model, prompts, ids, self.tok.pad_token_id,
                                   self.batch_size)
        out = []
        for text, toks, lps, start in zip(responses, ids, scores, reviewed_from, strict=True):
            steps = split_steps(text)
            ends = _char_ends(self.tok, toks)  # character offset after each token
            verdict = Verdict(None, None)
            for j in range(first_reviewed_step(text, start), len(steps)):
                st = steps[j]
                span = [lp for lp, e, prev in zip(lps, ends, [0, *ends[:-1]], strict=True)
                        if e > st.start and prev < st.end]
                if span and min(span) < self.threshold:
                    verdict = Verdict(j, st.start)
                    break
            out.append(verdict)
        return out


def _char_ends(tokenizer, ids: list[int]) -> list[int]:
    return [len(tokenizer.decode(ids[: t + 1], skip_special_tokens=True))
            for t in range(len(ids))]


class NoisyJudge:
    """Ablation wrapper: misses a flagged error with ``miss_rate``; flags a random reviewed
    step of a clean review with ``false_alarm_rate``."""

    def __init__(self, inner: Judge, miss_rate: float, false_alarm_rate: float, seed: int = 0):
        self.inner, self.miss, self.false_alarm = inner, miss_rate, false_alarm_rate
        self.rng = np.random.default_rng(seed)

    def review(self, problems, responses, reviewed_from, finished):
        out = []
        for v, text, start in zip(self.inner.review(problems, responses, reviewed_from,
                                                    finished), responses, reviewed_from,
                                  strict=True):
            if v.first_wrong is not None and self.rng.random() < self.miss:
                v = Verdict(None, None, v.parsed)
            elif v.first_wrong is None and v.parsed and self.rng.random() < self.false_alarm:
                steps = split_steps(text)
                first = first_reviewed_step(text, start)
                if first < len(steps):
                    j = int(self.rng.integers(first, len(steps)))
                    v = Verdict(j, steps[j].start)
            out.append(v)
        return out


JUDGES = ("oracle", "likelihood", "chat")


def agreement(judged: list[Verdict], oracle: list[Verdict], first_reviewed: list[int]
              ) -> dict[str, int]:
    """Counts for precision and recall of a judge against the oracle, per review.

    A review is positive when the oracle finds an error among the reviewed steps. "any": the
    judge flags some step of a positive review; "exact": it flags the oracle's earliest step.
    """
    c = {"reviews": 0, "positive": 0, "flagged": 0, "tp_any": 0, "tp_exact": 0}
    for j, o, first in zip(judged, oracle, first_reviewed, strict=True):
        pos = o.first_wrong is not None and o.first_wrong >= first
        flag = j.first_wrong is not None
        c["reviews"] += 1
        c["positive"] += pos
        c["flagged"] += flag
        c["tp_any"] += pos and flag
        c["tp_exact"] += pos and flag and j.first_wrong == o.first_wrong
    return c
