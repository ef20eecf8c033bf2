"""Semi-on-policy rollouts (Algorithm 2.1, DESIGN.md §1.1).

All rollouts advance together, round by round: one batched policy call for a chunk of at most
C tokens, one batched judge call on the rows that still have reviews left (at most R), one
batched intervener call for the rows cut at a wrong step (at most L tokens each); the policy
resumes right after the correction, its KV cache kept (``ChunkedDecoder``). Every response
token records its provenance (POLICY or INTERVENTION) and its generator's log-prob.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import torch

from mintrl.engine.base import Sampling
from mintrl.engine.chunked import ChunkedDecoder
from mintrl.judges import OracleJudge, agreement, first_reviewed_step
from mintrl.progress import progress
from mintrl.prompting import encode_prompts
from mintrl.schemas import INTERVENTION, NO_ERROR, NO_VERDICT, POLICY
from mintrl.steps import split_steps
from mintrl.tasks import Problem


@dataclass
class Trajectory:
    """One semi-on-policy rollout while it is being written."""

    problem: Problem
    tokens: list[int] = field(default_factory=list)
    provenance: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    reviews: int = 0
    verdicts: list[int] = field(default_factory=list)  # per review: step, NO_ERROR, NO_VERDICT
    corrections: list[int] = field(default_factory=list)  # length of each correction
    finish_reason: str | None = None  # None while generating


@dataclass(frozen=True)
class Intensity:
    """The paper's intervention-intensity knobs."""

    chunk_tokens: int  # C
    max_reviews: int  # R (reviews, not corrections)
    correction_tokens: int  # L


def cut_token(tokenizer, tokens: list[int], char_cut: int) -> int:
    """Fewest leading tokens whose text reaches ``char_cut``: a boundary inside a merged token
    moves to that token's end (DESIGN.md §1.1)."""
    lo, hi = 0, len(tokens)  # decoded length grows with t: binary search, O(log n) decodes
    while lo < hi:
        mid = (lo + hi) // 2
        if len(tokenizer.decode(tokens[:mid], skip_special_tokens=True)) >= char_cut:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _reviewed_from(text: str) -> int:
    """Start of the last step of the accepted text: it may be unfinished, so it is reviewed
    again joined with the new chunk."""
    steps = split_steps(text)
    return steps[-1].start if steps else 0


def semi_on_policy_rollouts(policy, tokenizer, problems: list[Problem], judge, intervener,
                            intensity: Intensity, sampling: Sampling, check_with_oracle=False,
                            use_intervener_cache: bool = True,
                            ) -> tuple[list[Trajectory], dict[str, float]]:
    """One semi-on-policy rollout per entry of ``problems`` (repeat a problem for several),
    sampled from ``policy`` (an engine, or a Hugging Face model).

    ``use_intervener_cache`` False: the intervener re-encodes each cut row's prompt and prefix
    (no second KV cache for the whole batch: the memory-light choice for large interveners).
    Returns the trajectories and stats: timings (``generate``, ``judge``, ``intervene``
    seconds), tokens decoded (``tokens/policy_sampled``, cut ones included, and
    ``tokens/intervener``) and, with ``check_with_oracle`` (a model judge on a task with an
    oracle), the review counts of ``judges.agreement`` under ``agreement/…``.
    """
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    prompt_ids = encode_prompts(tokenizer, problems)
    gen = torch.Generator(device="cpu").manual_seed(sampling.seed)
    times = {"generate": 0.0, "judge": 0.0, "intervene": 0.0}
    counts: dict[str, int] = {}
    sampled = {"tokens/policy_sampled": 0, "tokens/intervener": 0}
    t0 = time.perf_counter()
    # an engine's own chunked decoder (KV cache kept across rounds; vLLM: prefix caching), or
    # for a bare Hugging Face model, the transformers one
    dec = (policy.chunked(prompt_ids, eos, pad, sampling, gen) if hasattr(policy, "chunked")
           else ChunkedDecoder(policy, prompt_ids, eos, pad, sampling, gen))
    times["generate"] += time.perf_counter() - t0
    fix_sampling = Sampling(max_new_tokens=intensity.correction_tokens,
                            temperature=sampling.temperature, top_p=sampling.top_p,
                            top_k=sampling.top_k, seed=sampling.seed + 7919)
    t0 = time.perf_counter()
    session = (intervener.session(problems, fix_sampling) if use_intervener_cache
               and hasattr(intervener, "session") else None)
    times["intervene"] += time.perf_counter() - t0
    trajs = [Trajectory(p) for p in problems]
    limit = sampling.max_new_tokens
    round_ = 0
    bar = progress(desc=f"semi-on-policy {len(problems)} rollouts", unit="round")
    while dec.active:
        round_ += 1
        bar.update(1)
        bar.set_postfix(active=len(dec.active), judge_s=f"{times['judge']:.0f}",
                        intervene_s=f"{times['intervene']:.0f}", refresh=False)
        t0 = time.perf_counter()
        accepted = {r: tokenizer.decode(trajs[r].tokens, skip_special_tokens=True)
                    for r in dec.active}
        chunk = dec.generate({r: min(intensity.chunk_tokens, limit - len(trajs[r].tokens))
                              for r in dec.active})
        for r, (toks, lps) in chunk.items():
            sampled["tokens/policy_sampled"] += len(toks)
            tr = trajs[r]
            tr.tokens += toks
            tr.logprobs += lps
            tr.provenance += [POLICY] * len(toks)
            if toks and toks[-1] == eos:
                tr.finish_reason = "stop"
            elif len(tr.tokens) >= limit:
                tr.finish_reason = "length"
        times["generate"] += time.perf_counter() - t0

        review = [r for r in dec.active if trajs[r].reviews < intensity.max_reviews
                  and chunk.get(r, ([], []))[0]]
        cuts: dict[int, int] = {}
        if review:
            t0 = time.perf_counter()
            texts = [tokenizer.decode(trajs[r].tokens, skip_special_tokens=True) for r in review]
            args = ([trajs[r].problem for r in review], texts,
                    [_reviewed_from(accepted[r]) for r in review],
                    [trajs[r].finish_reason == "stop" for r in review])
            verdicts = judge.review(*args)
            if check_with_oracle:
                truth = OracleJudge().review(*args)
                firsts = [first_reviewed_step(t, s) for t, s in zip(texts, args[2], strict=True)]
                for k, v in agreement(verdicts, truth, firsts).items():
                    counts[k] = counts.get(k, 0) + v
            for r, v in zip(review, verdicts, strict=True):
                tr = trajs[r]
                tr.reviews += 1
                if not v.parsed:
                    tr.verdicts.append(NO_VERDICT)
                else:
                    tr.verdicts.append(NO_ERROR if v.first_wrong is None else v.first_wrong)
                if v.cut is not None:
                    cuts[r] = cut_token(tokenizer, tr.tokens, v.cut)
            times["judge"] += time.perf_counter() - t0

        if cuts:
            t0 = time.perf_counter()
            for r, keep in cuts.items():
                tr = trajs[r]
                dec.cut(r, len(tr.tokens) - keep)
                del tr.tokens[keep:], tr.logprobs[keep:], tr.provenance[keep:]
                tr.finish_reason = None  # a cut can remove the EOS or the length limit
            rows = list(cuts)
            caps = [min(intensity.correction_tokens, limit - len(trajs[r].tokens)) for r in rows]
            if session is not None:
                fixes = session.correct(rows, [trajs[r].tokens for r in rows], caps)
            else:
                fixes = intervener.correct(
                    [trajs[r].problem for r in rows],
                    [tokenizer.decode(trajs[r].tokens, skip_special_tokens=True) for r in rows],
                    caps, replace(fix_sampling, seed=sampling.seed + 7919 * round_))
            times["intervene"] += time.perf_counter() - t0
            t0 = time.perf_counter()
            for r, fix in zip(rows, fixes, strict=True):
                sampled["tokens/intervener"] += len(fix.token_ids)
                tr = trajs[r]
                tr.tokens += fix.token_ids
                tr.logprobs += fix.logprobs
                tr.provenance += [INTERVENTION] * len(fix.token_ids)
                tr.corrections.append(len(fix.token_ids))
                if fix.token_ids and fix.token_ids[-1] == eos:
                    tr.finish_reason = "stop"  # a correction may end the response
                elif len(tr.tokens) >= limit:
                    tr.finish_reason = "length"
            dec.append({r: fix.token_ids for r, fix in zip(rows, fixes, strict=True)
                        if trajs[r].finish_reason is None})
            times["generate"] += time.perf_counter() - t0
        done = [r for r in dec.active if trajs[r].finish_reason is not None]
        dec.drop(done)
        if session is not None:
            session.drop(done)
    bar.close()
    return trajs, times | sampled | {f"agreement/{k}": float(v) for k, v in counts.items()}
