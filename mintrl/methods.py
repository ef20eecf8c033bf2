"""What each method is (docs/design.md §1.2-1.3): one entry per method, read by everything that
would otherwise ask for a method by name.

A method is a rollout mode and an objective per phase. The teacher phase (iterations
1..T_I, ``RunSpec.intervention_iterations``) exists only for methods that declare one; after
it, or for a method without one, every rollout is on-policy and the method's ``objective``
trains (MInTRL and its control: the run's ``post_phase_objective``). Rollout modes are
registered in ``mintrl.rollout``, objectives in ``mintrl.algo.objectives``.
"""

from __future__ import annotations

from dataclasses import dataclass

# The run's own ``post_phase_objective`` (regression by default, grpo allowed), not a fixed one
POST_PHASE = "post_phase_objective"


@dataclass(frozen=True)
class Phase:
    """The teacher phase: the rollout mode and objective of iterations 1..T_I."""

    rollout: str
    objective: str
    judge: bool = False  # a judge reviews and an intervener corrects (MInTRL's Algorithm 2.1)


@dataclass(frozen=True)
class Method:
    """``objective``: trains every on-policy iteration (after the phase, or always);
    ``phase``: the teacher phase, None for none; ``teacher_always``: the teacher is loaded
    at every iteration (OPD), not only in the phase; ``scores_tokens``: the teacher scores the
    policy's sampled tokens (a shared vocabulary, a transformers teacher); ``sft_start``: RL
    starts from an SFT of the base on the teacher's trajectories."""

    objective: str
    phase: Phase | None = None
    teacher_always: bool = False
    scores_tokens: bool = False
    sft_start: bool = False


METHODS: dict[str, Method] = {
    "grpo": Method(objective="grpo"),
    "sft_grpo": Method(objective="grpo", sft_start=True),
    "opd": Method(objective="opd", teacher_always=True, scores_tokens=True),
    "mentor": Method(objective="grpo", phase=Phase("mixed-policy", "mentor"),
                     scores_tokens=True),
    "mintrl": Method(objective=POST_PHASE,
                     phase=Phase("semi-on-policy", "regression", judge=True)),
    # a control: MInTRL's rollouts, next-token training on the intervention tokens only
    "corrections_only": Method(objective=POST_PHASE,
                               phase=Phase("semi-on-policy", "corrections", judge=True)),
}


# The RunSpec keys each part of a method reads (an objective by name; "judge": the judge and
# intervener of a reviewed phase; "phase", "sft_start", "post_phase"). Every other key is read
# by every method. A run logs only its method's keys to MLflow (mintrl.report.run_metrics).
_GRPO = ("group_size", "clip_eps", "kl_coef", "adv_eps")
SPEC_KEYS: dict[str, tuple[str, ...]] = {
    "grpo": _GRPO,
    "mentor": (*_GRPO, "n_guided", "guide_quantile"),
    "opd": ("group_size", "distill_weight", "distill_reward_weight", "kl_coef"),
    "regression": ("anchor", "const_c", "const_c_rule", "const_bonus", "beta1", "beta2",
                   "gradient_parts"),
    "corrections": (),
    "judge": ("n_semi", "n_control", "chunk_tokens", "max_reviews", "correction_tokens",
              "intervener_kv_cache", "judge", "judge_threshold", "judge_miss_rate",
              "judge_false_alarm_rate", "wrong_correction_rate", "wrong_correction",
              "intervener"),
    "phase": ("intervention_iterations", "teacher_engine"),
    "sft_start": ("sft", "teacher_engine"),
    "post_phase": ("post_phase_objective",),
    "teacher_always": ("teacher_engine",),
}
METHOD_KEYS = frozenset(k for keys in SPEC_KEYS.values() for k in keys)


def spec_keys(method: Method, post_phase_objective: str) -> frozenset[str]:
    """The keys of ``METHOD_KEYS`` that ``method`` reads (all of them for a method with a part
    this table does not know: a plugin's)."""
    parts = {post_phase_objective if method.objective == POST_PHASE else method.objective}
    parts |= {"post_phase"} if method.objective == POST_PHASE else set()
    if method.phase is not None:
        parts |= {method.phase.objective, "phase", *(["judge"] if method.phase.judge else [])}
    parts |= {"sft_start"} if method.sft_start else set()
    parts |= {"teacher_always"} if method.teacher_always else set()
    if parts - set(SPEC_KEYS):
        return METHOD_KEYS
    return frozenset(k for part in parts for k in SPEC_KEYS[part])


def register_method(name: str, method: Method) -> Method:
    """Add a method to the table (a new method's module calls this; its objective and
    rollout modes are registered the same way). A taken name is an error."""
    if name in METHODS:
        raise ValueError(f"method {name!r} is already registered")
    METHODS[name] = method
    return method


def get_method(name: str) -> Method:
    if name not in METHODS:
        raise KeyError(f"unknown method {name!r}; methods: {sorted(METHODS)}")
    return METHODS[name]
