"""A prompted chat LLM as judge and intervener (the paper setting: Qwen3-4B-Instruct-2507).

Templates live in ``config/prompts/`` (``judge.txt``: numbered steps in, one ``VERDICT:`` line
out; ``intervene.txt``: the retained prefix in, the next step out). An answer that cannot be
parsed is a counted "no verdict" (``Verdict.parsed = False``), never a crash. The correction
crosses to the policy as text and is re-tokenized by the policy's tokenizer.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from mintrl.engine.base import Sampling
from mintrl.intervention.interveners import Correction
from mintrl.intervention.judges import Verdict, first_reviewed_step
from mintrl.prompting import chat_text
from mintrl.steps import split_steps
from mintrl.tasks import Problem

PROMPTS = Path(__file__).resolve().parents[2] / "config" / "prompts"
_VERDICT = re.compile(r"verdict\W*[:=]\W*(none|\d+)", re.IGNORECASE)


def parse_verdict(answer: str, n_steps: int) -> tuple[bool, int | None]:
    """(parsed, 1-based step or None) from a judge's answer; the last VERDICT line counts.

    A step number outside 1..n_steps is unparseable: the judge named a step it was not shown.
    """
    found = _VERDICT.findall(answer)
    if not found:
        return False, None
    last = found[-1].lower()
    if last == "none":
        return True, None
    k = int(last)
    return (True, k) if 1 <= k <= n_steps else (False, None)


def verdict_from_answer(answer: str, text: str, first: int) -> Verdict:
    """The judge's answer about the steps of ``text`` from index ``first`` on, as a Verdict
    on the whole text (step numbers in the prompt count from 1 at the first reviewed step)."""
    steps = split_steps(text)
    ok, k = parse_verdict(answer, len(steps) - first)
    if not ok:
        return Verdict(None, None, parsed=False)
    if k is None:
        return Verdict(None, None)
    j = first + k - 1
    return Verdict(j, steps[j].start)


def numbered(texts: list[str]) -> str:
    return "\n".join(f"Step {i}: {t}" for i, t in enumerate(texts, 1)) or "(none)"


def _chat_ids(tokenizer, text: str) -> list[int]:
    return tokenizer(chat_text(tokenizer, text), add_special_tokens=False)["input_ids"]


class ChatJudge:
    def __init__(self, engine, tokenizer, template: str | None = None, max_tokens: int = 32):
        self.engine, self.tok, self.max_tokens = engine, tokenizer, max_tokens
        self.template = template or (PROMPTS / "judge.txt").read_text()

    def review(self, problems: list[Problem], responses: list[str], reviewed_from: list[int],
               finished: list[bool]) -> list[Verdict]:
        prompts, meta = [], []
        for p, text, start in zip(problems, responses, reviewed_from, strict=True):
            steps = split_steps(text)
            first = first_reviewed_step(text, start)
            shown = [text[s.start:s.end] for s in steps[first:]]
            accepted = [text[s.start:s.end] for s in steps[:first]]
            prompts.append(_chat_ids(self.tok, self.template.format(
                problem=p.prompt.strip(), accepted=numbered(accepted), steps=numbered(shown))))
            meta.append((steps, first, len(shown)))
        gen = self.engine.generate(prompts, Sampling(max_new_tokens=self.max_tokens,
                                                     temperature=1e-5))
        return [verdict_from_answer(self.tok.decode(ids, skip_special_tokens=True), text, first)
                for ids, text, (_, first, _) in zip(gen.token_ids, responses, meta, strict=True)]


class ChatIntervener:
    def __init__(self, engine, tokenizer, policy_tokenizer, template: str | None = None):
        self.engine, self.tok, self.policy_tok = engine, tokenizer, policy_tokenizer
        self.template = template or (PROMPTS / "intervene.txt").read_text()

    def correct(self, problems, prefixes, max_tokens, sampling) -> list[Correction]:
        prompts = [_chat_ids(self.tok, self.template.format(problem=p.prompt.strip(),
                                                            prefix=pre or "(empty)"))
                   for p, pre in zip(problems, prefixes, strict=True)]
        gen = self.engine.generate(prompts, Sampling(
            max_new_tokens=max(max_tokens), temperature=sampling.temperature,
            top_p=sampling.top_p, top_k=sampling.top_k, seed=sampling.seed))
        out = []
        for ids, cap in zip(gen.token_ids, max_tokens, strict=True):
            text = self.tok.decode(ids, skip_special_tokens=True).strip("\n")
            # a chat answer is the next step: it continues the prefix after a step separator
            toks = self.policy_tok(text + "\n\n", add_special_tokens=False)["input_ids"][:cap]
            out.append(Correction(toks, [math.nan] * len(toks)))
        return out
