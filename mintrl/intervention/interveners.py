"""Interveners: continue a cut response for at most L tokens (the correction).

``ModelIntervener`` wraps any causal LM an engine loads: the teacher (default) or the policy
itself given the reference solution (self-intervention; the stored training prompt stays the
plain one). When its tokenizer differs from the policy's, the correction crosses as text and is
re-tokenized by the policy's tokenizer (its log-probs are then unknown: NaN).

With a shared vocabulary, ``ModelIntervener.session`` gives a rollout batch one decoder on the
intervener's model that follows the rollouts: each correction feeds only the tokens the
intervener has not seen yet (KV cache kept across rounds) instead of re-encoding prompt and
prefix of every cut row, which was most of a MInTRL round's cost (``benchmarks/round_cost.py``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import torch

from mintrl.engine.base import Sampling
from mintrl.prompting import encode_prompts, prompt_text
from mintrl.tasks import Problem, get_task

WRONG_CORRECTIONS = ("digits", "random")


@dataclass
class Correction:
    token_ids: list[int]  # in the policy's vocabulary
    logprobs: list[float]  # the intervener's own raw log-probs (NaN when re-tokenized)
    wrong: bool = False  # made wrong on purpose (the wrong-correction ablation)


def wrong_digits(text: str, rng: np.random.Generator) -> str | None:
    """``text`` with every digit of its last number replaced by another digit: a plausible
    wrong value in a well-formed step (the toy's looked-up fact, or the result it gives).
    None when the text has no digit."""
    runs = list(re.finditer(r"[0-9]+", text))
    if not runs:
        return None
    last = runs[-1]
    new = "".join(str((int(d) + int(rng.integers(1, 10))) % 10) for d in last.group())
    return text[:last.start()] + new + text[last.end():]


class CorrectionSession:
    """Corrections for one batch of rollouts from a decoder that keeps the intervener's KV
    cache across rounds. Rows are the batch's rollout indices, as in ``ChunkedDecoder``."""

    def __init__(self, decoder):
        self.dec = decoder

    def correct(self, rows: list[int], responses: list[list[int]],
                max_tokens: list[int]) -> list[Correction]:
        """``responses``: each row's retained response token ids (the policy's vocabulary,
        shared with the intervener's). One batched sync, then one batched decode."""
        self.dec.sync(dict(zip(rows, responses, strict=True)))
        out = self.dec.generate(dict(zip(rows, max_tokens, strict=True)))
        return [Correction(*out[r]) for r in rows]

    def drop(self, rows: list[int]) -> None:
        self.dec.drop(rows)


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

    def session(self, problems: list[Problem], sampling: Sampling) -> CorrectionSession | None:
        """A cached decoder for a batch of rollouts of ``problems`` (None without a shared
        vocabulary: the correction must cross as text). ``sampling.seed`` seeds it once."""
        if not self.same_vocab or not hasattr(self.engine, "chunked"):
            return None
        contents = ([get_task(p.task).privileged_prompt(p) for p in problems]
                    if self.privileged else None)
        ids = encode_prompts(self.tok, problems, contents)
        gen = torch.Generator(device="cpu").manual_seed(sampling.seed)
        return CorrectionSession(self.engine.chunked(ids, self.tok.eos_token_id,
                                                     self.tok.pad_token_id, sampling, gen))

    def correct(self, problems: list[Problem], prefixes: list[str], max_tokens: list[int],
                sampling: Sampling) -> list[Correction]:
        """One batched call, re-encoding each prompt and prefix; ``prefixes`` are the
        retained response texts."""
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
    """Ablation wrapper: with probability ``rate`` a correction is made wrong. ``digits``: its
    last number gets other digits (``wrong_digits``; a correction without a digit stays
    right); ``random``: it becomes as many random tokens of the policy's vocabulary. Either
    way its log-probs are unknown (NaN) and it is marked ``wrong``."""

    def __init__(self, inner, tokenizer, rate: float, seed: int = 0, kind: str = "digits"):
        if kind not in WRONG_CORRECTIONS:
            raise ValueError(f"unknown wrong-correction kind {kind!r}; known: "
                             f"{list(WRONG_CORRECTIONS)}")
        self.inner, self.tok, self.rate, self.kind = inner, tokenizer, rate, kind
        self.rng = np.random.default_rng(seed)

    def _wrong(self, ids: list[int]) -> list[int] | None:
        if self.kind == "random":
            return self.rng.integers(0, len(self.tok), size=len(ids)).tolist()
        ended = ids[-1] == self.tok.eos_token_id
        text = wrong_digits(self.tok.decode(ids, skip_special_tokens=True), self.rng)
        if text is None:
            return None
        new = self.tok(text, add_special_tokens=False)["input_ids"]
        return (new + [self.tok.eos_token_id] if ended else new)[:len(ids)]

    def _noised(self, fixes: list[Correction]) -> list[Correction]:
        out = []
        for fix in fixes:
            if fix.token_ids and self.rng.random() < self.rate:
                ids = self._wrong(fix.token_ids)
                if ids is not None:
                    fix = Correction(ids, [math.nan] * len(ids), wrong=True)
            out.append(fix)
        return out

    def correct(self, problems, prefixes, max_tokens, sampling):
        return self._noised(self.inner.correct(problems, prefixes, max_tokens, sampling))

    def session(self, problems, sampling):
        inner = getattr(self.inner, "session", lambda *_: None)(problems, sampling)
        return None if inner is None else _NoisySession(self, inner)


class _NoisySession:
    """The inner intervener's session, each correction passed through the noise. The inner
    decoder keeps the original correction; its ``sync`` cuts it when the rollout differs."""

    def __init__(self, noisy: NoisyIntervener, inner: CorrectionSession):
        self.noisy, self.inner = noisy, inner

    def correct(self, rows, responses, max_tokens):
        return self.noisy._noised(self.inner.correct(rows, responses, max_tokens))

    def drop(self, rows):
        self.inner.drop(rows)


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
