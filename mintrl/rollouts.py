"""The rollouts of an iteration: prompt choice and seeds, on-policy sampling, the rollout
modes (``ROLLOUT_MODES``: on-policy, semi-on-policy, mixed-policy), the rollout row and what
an iteration logs of its rollouts. ``python -m mintrl.rollout`` is its CLI.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from mintrl.config import RunSpec
from mintrl.engine import Sampling
from mintrl.engine.mixed import MixedPolicySampler
from mintrl.intervention.judges import OracleJudge
from mintrl.intervention.semi_on_policy import Intensity, semi_on_policy_rollouts
from mintrl.io import read_table
from mintrl.prompting import encode_prompts
from mintrl.registry import Registry
from mintrl.schemas import NO_VERDICT, POLICY, ROLLOUTS
from mintrl.tasks import Problem, get_task, grade
from mintrl.training.distributed import gather_objects
from mintrl.training.logprobs import response_entropies


def iteration_seed(run_seed: int, iteration: int, purpose: int = 0) -> int:
    """A seed for (run, iteration, purpose): a resumed run draws exactly what it would have."""
    return int(np.random.SeedSequence([run_seed, iteration, purpose]).generate_state(1)[0])


def select_prompts(problems: list[Problem], n: int, run_seed: int, iteration: int) -> list[Problem]:
    """``n`` prompts for this iteration: a fresh permutation per epoch over the prompt set,
    so every prompt is seen once before any is seen twice."""
    per_epoch = len(problems)
    first = (iteration - 1) * n
    out = []
    for pos in range(first, first + n):
        epoch, idx = divmod(pos, per_epoch)
        perm = np.random.default_rng(iteration_seed(run_seed, epoch, 1)).permutation(per_epoch)
        out.append(problems[int(perm[idx])])
    return out


def rollout_row(run: str, iteration: int, problem: Problem, sample: int, kind: str,
                prompt_ids: list[int], response_ids: list[int], provenance: list[int],
                logprobs: list[float], reward: float, finish_reason: str, text: str,
                reviews: int = 0, interventions: int = 0,
                verdicts: list[int] | None = None) -> dict:
    """One row of ``schemas.ROLLOUTS``: a trajectory, each response token's provenance
    (``POLICY`` or ``INTERVENTION``) and its generator's log-prob, the raw reward."""
    return {
        "run": run, "iteration": iteration, "problem_id": problem.id,
        "difficulty": problem.difficulty, "sample": sample, "kind": kind,
        "prompt_ids": prompt_ids, "response_ids": response_ids, "provenance": provenance,
        "logprobs": logprobs, "reward": float(reward), "finish_reason": finish_reason,
        "reviews": reviews, "interventions": interventions,
        "verdicts": [] if verdicts is None else verdicts, "text": text,
    }


def on_policy_rollouts(
    engine, tokenizer, problems: list[Problem], group_size: int, sampling: Sampling,
    run: str, iteration: int, kind: str = "on-policy",
) -> tuple[pd.DataFrame, dict[str, float]]:
    """``group_size`` samples per prompt, graded; rows follow ``ROLLOUTS``.

    Returns (rows, timings) with timings ``generate`` and ``reward`` in seconds.
    """
    prompt_ids = encode_prompts(tokenizer, problems)
    expanded = [(p, ids) for p, ids in zip(problems, prompt_ids, strict=True)
                for _ in range(group_size)]
    t0 = time.perf_counter()
    gen = engine.generate([ids for _, ids in expanded], sampling)
    t1 = time.perf_counter()
    texts = tokenizer.batch_decode(gen.token_ids, skip_special_tokens=True)
    rewards = grade([p for p, _ in expanded], texts)
    t2 = time.perf_counter()
    rows = [rollout_row(run, iteration, p, i % group_size, kind, ids, gen.token_ids[i],
                        [POLICY] * len(gen.token_ids[i]), gen.logprobs[i], rewards[i],
                        gen.finish_reasons[i], texts[i])
            for i, (p, ids) in enumerate(expanded)]
    return pd.DataFrame(rows, columns=ROLLOUTS.names), {"generate": t1 - t0, "reward": t2 - t1}


def semi_rows(trajs, tokenizer, prompt_ids: list[list[int]], run: str, iteration: int,
              first_sample: int, per_prompt: int) -> pd.DataFrame:
    """ROLLOUTS rows of semi-on-policy trajectories (``per_prompt`` consecutive per prompt)."""
    texts = [tokenizer.decode(t.tokens, skip_special_tokens=True) for t in trajs]
    rewards = grade([t.problem for t in trajs], texts)
    rows = [rollout_row(run, iteration, t.problem, first_sample + i % per_prompt, "semi",
                        prompt_ids[i], t.tokens, t.provenance, t.logprobs, rewards[i],
                        t.finish_reason or "length", texts[i], t.reviews, len(t.corrections),
                        t.verdicts)
            for i, t in enumerate(trajs)]
    return pd.DataFrame(rows, columns=ROLLOUTS.names)


@dataclass
class RolloutContext:
    """What a rollout mode may use in one iteration: the policy's sampler and tokenizer, the
    run, and the teacher-side policies its method loads (None where it loads none)."""

    sampler: object
    tokenizer: object
    spec: RunSpec
    run: str
    iteration: int
    sampling: Sampling
    judge: object = None
    intervener: object = None
    teacher: object = None  # an engine (``.model``) sharing the policy's vocabulary


ROLLOUT_MODES = Registry("rollout mode")


@ROLLOUT_MODES.register("on-policy")
def on_policy_mode(ctx: RolloutContext, problems: list[Problem]):
    """GRPO, SFT+GRPO, OPD, and every method after its teacher phase: the run's whole
    budget per prompt sampled from the policy."""
    return on_policy_rollouts(ctx.sampler, ctx.tokenizer, problems, ctx.spec.rollouts_per_prompt,
                              ctx.sampling, ctx.run, ctx.iteration)


@ROLLOUT_MODES.register("semi-on-policy")
def semi_on_policy_mode(ctx: RolloutContext, problems: list[Problem]):
    """MInTRL's teacher phase: ``n_control`` control rollouts (kind "control") and ``n_semi``
    semi-on-policy ones (kind "semi") per prompt (docs/design.md §1.1)."""
    spec, sampling, tokenizer = ctx.spec, ctx.sampling, ctx.tokenizer
    control, times = on_policy_rollouts(ctx.sampler, tokenizer, problems, spec.n_control,
                                        sampling, ctx.run, ctx.iteration, kind="control")
    expanded = [p for p in problems for _ in range(spec.n_semi)]
    intensity = Intensity(spec.chunk_tokens, spec.max_reviews, spec.correction_tokens)
    trajs, semi_times = semi_on_policy_rollouts(
        ctx.sampler, tokenizer, expanded, ctx.judge, ctx.intervener, intensity,
        replace(sampling, seed=sampling.seed + 1),
        use_intervener_cache=spec.intervener_kv_cache,
        # a model judge is scored against the step oracle where the task has one (the toy)
        check_with_oracle=not isinstance(ctx.judge, OracleJudge)
        and all(get_task(p.task).has_oracle for p in problems))
    t0 = time.perf_counter()
    ids = encode_prompts(tokenizer, expanded)
    semi = semi_rows(trajs, tokenizer, ids, ctx.run, ctx.iteration, spec.n_control, spec.n_semi)
    times["reward"] += time.perf_counter() - t0
    times["generate"] += semi_times["generate"]
    times |= {"judge": semi_times["judge"], "intervene": semi_times["intervene"]}
    times |= judge_agreement(semi_times)
    times |= {k: v for k, v in semi_times.items() if k.startswith("corrections/")}
    return pd.concat([control, semi], ignore_index=True), times


@ROLLOUT_MODES.register("mixed-policy")
def mixed_policy_mode(ctx: RolloutContext, problems: list[Problem]):
    """MENTOR's teacher phase: ``group_size − n_guided`` on-policy samples per prompt, then
    ``n_guided`` guided ones (kind "guided") from the student/teacher mixture, with τ the
    ``guide_quantile`` quantile of the on-policy samples' token entropies (mintrl.engine.mixed).
    Provenance marks the tokens the teacher is the likelier source of."""
    spec, tokenizer, model = ctx.spec, ctx.tokenizer, ctx.sampler.model
    n_on = spec.group_size - spec.n_guided
    on, times = on_policy_rollouts(ctx.sampler, tokenizer, problems, n_on, ctx.sampling,
                                   ctx.run, ctx.iteration)
    t0 = time.perf_counter()
    ent = response_entropies(model, list(on["prompt_ids"].map(list)),
                             list(on["response_ids"].map(list)), tokenizer.pad_token_id)
    # data-parallel: τ is the quantile of the whole batch's entropies, as in one process
    mine = np.concatenate([np.asarray(e) for e in ent])
    tau = float(np.quantile(np.concatenate(gather_objects(mine)), spec.guide_quantile))
    expanded = [p for p in problems for _ in range(spec.n_guided)]
    ids = encode_prompts(tokenizer, expanded)
    mixer = MixedPolicySampler(model, ctx.teacher.model, tokenizer.eos_token_id,
                               tokenizer.pad_token_id, batch_size=512)
    gen = mixer.generate(ids, replace(ctx.sampling, seed=ctx.sampling.seed + 1), tau)
    t1 = time.perf_counter()
    texts = tokenizer.batch_decode(gen.token_ids, skip_special_tokens=True)
    rewards = grade(expanded, texts)
    rows = [rollout_row(ctx.run, ctx.iteration, p, n_on + i % spec.n_guided, "guided", ids[i],
                        gen.token_ids[i], gen.guided[i], gen.logprobs[i], rewards[i],
                        gen.finish_reasons[i], texts[i])
            for i, p in enumerate(expanded)]
    guided = pd.DataFrame(rows, columns=ROLLOUTS.names)
    alphas = np.concatenate([np.asarray(a) for a in gen.alphas])
    flags = np.concatenate([np.asarray(g) for g in gen.guided])
    times["generate"] += t1 - t0
    times["reward"] += time.perf_counter() - t1
    times |= {"mentor/tau": tau, "mentor/alpha_mean": float(alphas.mean()),
              "mentor/guided_token_share": float(flags.mean()),
              "mentor/guided_weight": spec.guided_weight(ctx.iteration)}
    return pd.concat([on, guided], ignore_index=True), times


def iteration_rollouts(sampler, tokenizer, problems: list[Problem], spec: RunSpec, run: str,
                       iteration: int, sampling: Sampling, judge=None, intervener=None,
                       teacher=None) -> tuple[pd.DataFrame, dict[str, float]]:
    """The rollouts of one iteration, by the rollout mode of the run's method and phase
    (``RunSpec.rollout_mode_at``). Returns (rows, stats): seconds per part (``generate``,
    ``reward``, ``judge``, ``intervene``) and the mode's own statistics (``judge/…``,
    ``mentor/…``)."""
    ctx = RolloutContext(sampler, tokenizer, spec, run, iteration, sampling, judge, intervener,
                         teacher)
    return ROLLOUT_MODES.lookup(spec.rollout_mode_at(iteration))(ctx, problems)


def judge_agreement(stats: dict[str, float]) -> dict[str, float]:
    """Precision and recall of a model judge against the oracle ("any error flagged" and
    "exact earliest step"), as ``judge/…`` entries; empty when no check ran."""
    if "agreement/reviews" not in stats:
        return {}
    flagged, positive = stats["agreement/flagged"], stats["agreement/positive"]
    out = {"judge/reviews": stats["agreement/reviews"]}
    for kind in ("any", "exact"):
        tp = stats[f"agreement/tp_{kind}"]
        out[f"judge/precision_{kind}"] = tp / flagged if flagged else float("nan")
        out[f"judge/recall_{kind}"] = tp / positive if positive else float("nan")
    return out


def intervention_stats(df: pd.DataFrame) -> dict[str, float]:
    """Per-kind reward, coverage of the control / semi / combined pools, intervention load."""
    out: dict[str, float] = {}
    for kind, part in df.groupby("kind"):
        out[f"rollout/reward_{kind}"] = float(part["reward"].mean())
    solved = df.groupby(["problem_id", "kind"])["reward"].max().unstack("kind")
    if {"on-policy", "guided"} <= set(df["kind"]):  # MENTOR: guided vs on-policy samples
        out["coverage/on-policy"] = float((solved["on-policy"] > 0).mean())
        out["coverage/guided"] = float((solved["guided"] > 0).mean())
        out["coverage/combined"] = float((solved.max(axis=1) > 0).mean())
    if not {"control", "semi"} <= set(df["kind"]):
        return out
    out["coverage/control"] = float((solved["control"] > 0).mean())
    out["coverage/semi"] = float((solved["semi"] > 0).mean())
    out["coverage/combined"] = float((solved.max(axis=1) > 0).mean())
    semi = df[df["kind"] == "semi"]
    n_tokens = semi["provenance"].map(len).sum()
    n_int = semi["provenance"].map(sum).sum()
    out["intervention/rate"] = float((semi["interventions"] > 0).mean())
    out["intervention/offpolicy_token_frac"] = float(n_int / max(n_tokens, 1))
    out["intervention/reviews_per_rollout"] = float(semi["reviews"].mean())
    out["intervention/corrections_per_rollout"] = float(semi["interventions"].mean())
    out["intervention/correction_len"] = float(n_int / max(semi["interventions"].sum(), 1))
    out["intervention/judge_parse_failures"] = float(
        semi["verdicts"].map(lambda v: sum(x == NO_VERDICT for x in v)).sum())
    return out


def wrong_correction_share(times: dict[str, float]) -> dict[str, float]:
    """The measured share of corrections made wrong (the wrong-correction ablation), from an
    iteration's counts (all ranks summed); empty when no correction was written."""
    written = times.get("corrections/written", 0)
    return ({"intervention/wrong_correction_share": times["corrections/wrong"] / written}
            if written else {})


def rollout_stats(df: pd.DataFrame) -> dict[str, float]:
    """What a user watches per iteration: reward, coverage, signal, length."""
    per_prompt = df.groupby("problem_id")["reward"]
    lengths = df["response_ids"].map(len)
    return intervention_stats(df) | {
        "rollout/reward": float(df["reward"].mean()),
        "rollout/solved_prompts": float((per_prompt.max() > 0).mean()),
        "rollout/zero_signal_groups": float((per_prompt.nunique() == 1).mean()),
        "rollout/response_len": float(lengths.mean()),
        "rollout/truncated": float((df["finish_reason"] == "length").mean()),
        "rollout/sequences": float(len(df)),
    }


def load_problems(path: str | Path) -> list[Problem]:
    return [Problem.from_row(r) for r in read_table(path).to_dict("records")]
