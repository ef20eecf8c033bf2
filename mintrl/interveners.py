"""Interveners: continue a cut response for at most L tokens (the correction).

``ModelIntervener`` wraps any causal LM an engine loads: the teacher (default) or the policy
itself given the reference solution (self-intervention; the stored training prompt stays the
plain one). When its tokenizer differs from the policy's, the correction crosses as text and is
re-tokenized by the policy's tokenizer (its log-probs are then unknown: NaN).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mintrl.engine.base import Sampling
from mintrl.prompting import prompt_text
from mintrl.tasks import Problem, get_task


@dataclass
class Correction:
    token_ids: list[int]  # in the policy's vocabulary
    logprobs: list[float]  # the intervener's own raw log-probs (NaN when re-tokenized)


class ModelIntervener:
    def __init__(self, engine, tokenizer, policy_tokenizer, privileged: bool = False):
        self.engine, self.tok, self.policy_tok = engine, tokenizer, policy_tokenizer
        self.privileged = privileged
        self.same_vocab = tokenizer.get_vocab() == policy_tokenizer.get_vocab()

    def prompt_texts(self, problems: list[Problem], prefixes: list[str]) -> list[str]:
        """What the intervener continues: the prompt (with the reference solution attached
        for self-intervention) and the retained prefix. Only the intervener sees this."""
        return [prompt_text(self.tok, p, get_task(p.task).privileged_prompt(p)
                            if self.privileged else None) + pre
                for p, pre in zip(problems, prefixes, strict=True)]

    def correct(self, problems: list[Problem], prefixes: list[str], max_tokens: list[int],
                sampling: Sampling) -> list[Correction]:
        """One batched call; ``prefixes`` are the retained response texts."""
        ids = self.tok(self.prompt_texts(problems, prefixes), add_special_tokens=False)[
            "input_ids"]
        longest = max(max_tokens)
        gen = self.engine.generate(ids, Sampling(max_new_tokens=longest,
                                                 temperature=sampling.temperature,
                                                 top_p=sampling.top_p, top_k=sampling.top_k,
                                                 seed=sampling.seed))
        out = []
        for toks, lps, cap in zip(gen.token_ids, gen.logprobs, max_tokens, strict=True):
            toks, lps = toks[:cap], lps[:cap]
            if not self.same_vocab:
                ended = bool(toks) and toks[-1] == self.tok.eos_token_id
                text = self.tok.decode(toks, skip_special_tokens=True)
                toks = self.policy_tok(text, add_special_tokens=False)["input_ids"]
                toks = (toks + [self.policy_tok.eos_token_id] if ended else toks)[:cap]
                lps = [math.nan] * len(toks)
            out.append(Correction(toks, lps))
        return out


class NoisyIntervener:
    """Ablation wrapper: with ``rate``, a correction is replaced by as many random tokens of
    the policy's vocabulary (their log-probs unknown: NaN)."""

    def __init__(self, inner, vocab_size: int, rate: float, seed: int = 0):
        self.inner, self.vocab, self.rate = inner, vocab_size, rate
        self.rng = np.random.default_rng(seed)

    def correct(self, problems, prefixes, max_tokens, sampling):
        out = []
        for fix in self.inner.correct(problems, prefixes, max_tokens, sampling):
            if fix.token_ids and self.rng.random() < self.rate:
                ids = self.rng.integers(0, self.vocab, size=len(fix.token_ids)).tolist()
                fix = Correction(ids, [math.nan] * len(ids))
            out.append(fix)
        return out


class ReferenceIntervener:
    """The ideal intervener: continues with the reference solution (an upper bound for
    ablations, and a known-correct intervener for tests). Needs problems with a solution."""

    def __init__(self, policy_tokenizer):
        self.tok = policy_tokenizer

    def correct(self, problems: list[Problem], prefixes: list[str], max_tokens: list[int],
                sampling: Sampling) -> list[Correction]:
        out = []
        for p, pre, cap in zip(problems, prefixes, max_tokens, strict=True):
            if not p.solution:
                raise ValueError(f"problem {p.id}: the reference intervener needs a solution")
            rest = p.solution[len(pre):] if p.solution.startswith(pre) else p.solution
            ids = self.tok(rest, add_special_tokens=False)["input_ids"] + [self.tok.eos_token_id]
            out.append(Correction(ids[:cap], [0.0] * min(cap, len(ids))))
        return out
