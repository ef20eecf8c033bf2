"""Semi-on-policy rollouts (Algorithm 2.1, docs/design.md §1.1).

All rollouts advance together, round by round: one batched policy call for a chunk of at most
C tokens, one batched judge call on the rows that still have reviews left (at most R), one
batched intervener call for the rows cut at a wrong step (at most L tokens each); the policy
resumes right after the correction, its KV cache kept (``ChunkedDecoder``). Every response
token records its provenance (POLICY or INTERVENTION) and its generator's log-prob.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

import torch

from mintrl.engine.base import Sampling
from mintrl.engine.chunked import ChunkedDecoder
from mintrl.intervention.judges import OracleJudge, agreement, first_reviewed_step
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
    moves to that token's end (docs/design.md §1.1)."""
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


@contextmanager
def timed(times: dict[str, float], key: str):
    """Add the block's wall time to ``times[key]``."""
    t0 = time.perf_counter()
    yield
    times[key] += time.perf_counter() - t0


def extend(tr: Trajectory, tokens: list[int], logprobs: list[float], source: int, eos: int,
           limit: int) -> None:
    """Append generated tokens with their provenance (POLICY or INTERVENTION) and their
    generator's log-probs; an EOS or the length limit finishes the trajectory."""
    tr.tokens += tokens
    tr.logprobs += logprobs
    tr.provenance += [source] * len(tokens)
    if tokens and tokens[-1] == eos:
        tr.finish_reason = "stop"  # a correction may end the response too
    elif len(tr.tokens) >= limit:
        tr.finish_reason = "length"


def review_step(judge, tokenizer, trajs: list[Trajectory], review: list[int],
                accepted: dict[int, str], counts: dict[str, int] | None) -> dict[int, int]:
    """The judge reviews rows ``review`` (each its new chunk, from the last accepted step);
    returns row -> number of tokens kept, for the rows cut at a wrong step. ``counts``: add
    the judge's agreement with the oracle there (None: no check)."""
    texts = [tokenizer.decode(trajs[r].tokens, skip_special_tokens=True) for r in review]
    args = ([trajs[r].problem for r in review], texts,
            [_reviewed_from(accepted[r]) for r in review],
            [trajs[r].finish_reason == "stop" for r in review])
    verdicts = judge.review(*args)
    if counts is not None:
        truth = OracleJudge().review(*args)
        firsts = [first_reviewed_step(t, s) for t, s in zip(texts, args[2], strict=True)]
        for k, v in agreement(verdicts, truth, firsts).items():
            counts[k] = counts.get(k, 0) + v
    cuts: dict[int, int] = {}
    for r, v in zip(review, verdicts, strict=True):
        tr = trajs[r]
        tr.reviews += 1
        if not v.parsed:
            tr.verdicts.append(NO_VERDICT)
        else:
            tr.verdicts.append(NO_ERROR if v.first_wrong is None else v.first_wrong)
        if v.cut is not None:
            cuts[r] = cut_token(tokenizer, tr.tokens, v.cut)
    return cuts


def cut_and_correct(dec, trajs: list[Trajectory], cuts: dict[int, int], intervener, session,
                    tokenizer, max_tokens: int, limit: int, fix_sampling: Sampling):
    """Cut each row of ``cuts`` after its kept tokens (the policy's cache too) and let the
    intervener write at most ``max_tokens`` (L) from there: with its own KV cache
    (``session``) or re-encoding prompt and prefix. Returns (rows, corrections)."""
    for r, keep in cuts.items():
        tr = trajs[r]
        dec.cut(r, len(tr.tokens) - keep)
        del tr.tokens[keep:], tr.logprobs[keep:], tr.provenance[keep:]
        tr.finish_reason = None  # a cut can remove the EOS or the length limit
    rows = list(cuts)
    caps = [min(max_tokens, limit - len(trajs[r].tokens)) for r in rows]
    if session is not None:
        return rows, session.correct(rows, [trajs[r].tokens for r in rows], caps)
    return rows, intervener.correct(
        [trajs[r].problem for r in rows],
        [tokenizer.decode(trajs[r].tokens, skip_special_tokens=True) for r in rows],
        caps, fix_sampling)


def start(policy, intervener, tokenizer, problems: list[Problem], intensity: Intensity,
          sampling: Sampling, use_intervener_cache: bool, times: dict[str, float]):
    """The policy's chunked decoder over the prompts, the intervener's session (its own KV
    cache, when it has one and ``use_intervener_cache``) and the corrections' sampling."""
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    prompt_ids = encode_prompts(tokenizer, problems)
    gen = torch.Generator(device="cpu").manual_seed(sampling.seed)
    with timed(times, "generate"):
        # an engine's own chunked decoder (KV cache kept across rounds; vLLM: prefix
        # caching), or for a bare Hugging Face model, the transformers one
        dec = (policy.chunked(prompt_ids, eos, pad, sampling, gen) if hasattr(policy, "chunked")
               else ChunkedDecoder(policy, prompt_ids, eos, pad, sampling, gen))
    fix_sampling = Sampling(max_new_tokens=intensity.correction_tokens,
                            temperature=sampling.temperature, top_p=sampling.top_p,
                            top_k=sampling.top_k, seed=sampling.seed + 7919)
    with timed(times, "intervene"):
        session = (intervener.session(problems, fix_sampling) if use_intervener_cache
                   and hasattr(intervener, "session") else None)
    return dec, session, fix_sampling


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
    ``tokens/intervener``), corrections written and made wrong (``corrections/…``) and, with
    ``check_with_oracle`` (a model judge on a task with an oracle), the review counts of
    ``judges.agreement`` under ``agreement/…``.
    """
    eos = tokenizer.eos_token_id
    times = {"generate": 0.0, "judge": 0.0, "intervene": 0.0}
    counts: dict[str, int] | None = {} if check_with_oracle else None
    sampled = {"tokens/policy_sampled": 0, "tokens/intervener": 0, "corrections/written": 0,
               "corrections/wrong": 0}
    dec, session, fix_sampling = start(policy, intervener, tokenizer, problems, intensity,
                                       sampling, use_intervener_cache, times)
    trajs = [Trajectory(p) for p in problems]
    limit = sampling.max_new_tokens
    round_ = 0
    bar = progress(desc=f"semi-on-policy {len(problems)} rollouts", unit="round")
    while dec.active:
        round_ += 1
        bar.update(1)
        bar.set_postfix(active=len(dec.active), judge_s=f"{times['judge']:.0f}",
                        intervene_s=f"{times['intervene']:.0f}", refresh=False)
        # 1. the policy writes a chunk of at most C tokens
        with timed(times, "generate"):
            accepted = {r: tokenizer.decode(trajs[r].tokens, skip_special_tokens=True)
                        for r in dec.active}
            chunk = dec.generate({r: min(intensity.chunk_tokens, limit - len(trajs[r].tokens))
                                  for r in dec.active})
            for r, (toks, lps) in chunk.items():
                sampled["tokens/policy_sampled"] += len(toks)
                extend(trajs[r], toks, lps, POLICY, eos, limit)
        # 2. the judge reviews it (at most R reviews per rollout) and names the first wrong step
        review = [r for r in dec.active if trajs[r].reviews < intensity.max_reviews
                  and chunk.get(r, ([], []))[0]]
        cuts: dict[int, int] = {}
        if review:
            with timed(times, "judge"):
                cuts = review_step(judge, tokenizer, trajs, review, accepted, counts)
        # 3. cut there; the intervener writes at most L tokens; the policy resumes after them
        if cuts:
            with timed(times, "intervene"):
                rows, fixes = cut_and_correct(dec, trajs, cuts, intervener, session, tokenizer,
                                              intensity.correction_tokens, limit,
                                              replace(fix_sampling,
                                                      seed=sampling.seed + 7919 * round_))
            with timed(times, "generate"):
                for r, fix in zip(rows, fixes, strict=True):
                    sampled["tokens/intervener"] += len(fix.token_ids)
                    sampled["corrections/written"] += 1
                    sampled["corrections/wrong"] += fix.wrong
                    extend(trajs[r], fix.token_ids, fix.logprobs, INTERVENTION, eos, limit)
                    trajs[r].corrections.append(len(fix.token_ids))
                dec.append({r: fix.token_ids for r, fix in zip(rows, fixes, strict=True)
                            if trajs[r].finish_reason is None})
        done = [r for r in dec.active if trajs[r].finish_reason is not None]
        dec.drop(done)
        if session is not None:
            session.drop(done)
    bar.close()
    counts = counts or {}
    return trajs, times | sampled | {f"agreement/{k}": float(v) for k, v in counts.items()}
