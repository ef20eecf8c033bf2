"""Config of RL: a run (``RunSpec``, the ``rl`` block and each run's overrides) and the
evaluation, filter, sampling, DeepSpeed and SFT settings it uses."""

from __future__ import annotations

from typing import Literal

from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from mintrl.config.base import Strict
from mintrl.methods import METHODS, POST_PHASE, get_method


class SamplingSpec(Strict):
    """Sampling settings of the generation engine."""

    temperature: float = Field(1.0, gt=0, description="Softmax temperature.")
    top_p: float = Field(1.0, gt=0, le=1, description="Nucleus sampling mass.")
    top_k: int = Field(0, ge=0, description="Keep the k most likely tokens; 0 keeps all.")


class EvalSpec(Strict):
    """Pass@1 evaluation."""

    samples: int = Field(32, ge=1, description="Samples per problem; Pass@1 is their mean.")
    pass_k: list[int] = Field([1, 8, 32], description="k values of the unbiased pass@k.")
    batch_size: int = Field(512, ge=1, description="Sequences per generation batch.")
    sampling: SamplingSpec = Field(default_factory=SamplingSpec, description="Sampling.")


class FilterSpec(Strict):
    """Which training prompts RL sees: drop those the base policy always solves."""

    samples: int = Field(8, ge=1, description="Base-policy samples per training prompt.")
    keep_solved: float = Field(
        0.25, ge=0, le=1, description="Share of always-solved prompts kept anyway, so the "
        "toy's easy skills are still trained (training only on hard prompts made a "
        "prototype forget easy problems: 98.5 % -> ~5 %)."
    )


class DeepSpeedSpec(Strict):
    """DeepSpeed engine settings; the same code runs the CPU backend and ZeRO on GPUs."""

    zero_stage: int = Field(
        0, ge=0, le=3, description="ZeRO stage: 0 on one CPU process; 2 (optimizer state and "
        "gradients sharded) for Qwen3-1.7B, 3 (weights too) for 4B across GPUs.")
    bf16: bool = Field(False, description="bf16 training (GPUs); fp32 on CPU.")
    gradient_checkpointing: bool = Field(
        False, description="Recompute activations in the backward pass: long sequences fit "
        "(docs/design.md §4: 16 x 4096 needs it on one H200); about 20-30 % slower per step.")


class SFTSpec(Strict):
    """SFT+GRPO's supervised stage: the intervention policy's complete trajectories on the
    training prompts, then next-token training on them (docs/design.md §1.3)."""

    samples_per_prompt: int = Field(
        4, ge=1, description="Teacher samples per training prompt (run sampling settings).")
    only_correct: bool = Field(
        True, description="Keep only the samples the task's reward scores 1.")
    epochs: int = Field(2, ge=1, description="Passes over the kept samples.")
    lr: float = Field(
        1e-5, gt=0, description="AdamW learning rate (constant). On the toy's validation split "
        "1e-4 (2 epochs) cut the base's easy-problem Pass@1 from 95 % to 11 %, 3e-5 to 67 %, "
        "1e-5 to 90 %: the teacher's long chains overwrite what the base knows.")
    minibatch_size: int = Field(64, ge=1, description="Sequences per optimizer step.")
    micro_batch_size: int = Field(32, ge=1, description="Sequences per forward/backward.")

    @model_validator(mode="after")
    def _batches(self) -> SFTSpec:
        if self.minibatch_size % self.micro_batch_size:
            raise ValueError("minibatch_size must be a multiple of micro_batch_size")
        return self


class RunSpec(Strict):
    """One RL run. ``rl`` in the config is the base run; each entry of ``runs`` overrides it."""

    method: str = Field(
        "grpo", description="Algorithm, a name in `mintrl.methods.METHODS` (docs/design.md §1.3): "
        "'grpo' (on-policy groups, clipped "
        "surrogate); 'mintrl' (semi-on-policy + control rollouts, advantage regression); "
        "'sft_grpo' (SFT on the teacher's trajectories, then GRPO); 'opd' (on-policy "
        "distillation, reverse KL to the teacher); 'mentor' (teacher-mixed sampling at "
        "high-entropy tokens for part of each group, arXiv 2510.04140); "
        "'corrections_only' (a control: MInTRL's rollouts, but next-token training on the "
        "intervention tokens only, no reward, during the teacher phase).")
    engine: Literal["transformers", "vllm"] = Field(
        "transformers", description="Engine of the policy's rollouts and evaluations, chosen "
        "explicitly (never by what is installed): 'transformers' (CPU or GPU; the trainer's "
        "own module); 'vllm' (GPUs; its CPU build in tests), given the trainer's weights after "
        "every iteration. The teacher runs on `teacher_engine`; each vLLM engine takes "
        "`vllm_gpu_memory` of its GPU.")
    teacher_engine: Literal["transformers", "vllm"] = Field(
        "transformers", description="Engine of the teacher (MInTRL's judge and intervener, "
        "SFT+GRPO's trajectories): 'vllm' only where the teacher just writes text (the chat "
        "judge and intervener, the model intervener with the oracle or chat judge, the SFT "
        "stage's samples): OPD, MENTOR and the likelihood judge "
        "score tokens with the teacher's own model (an error there). Each vLLM engine takes "
        "`vllm_gpu_memory` of its GPU.")
    generation_cache: Literal["dynamic", "static"] = Field(
        "dynamic", description="KV cache of the transformers engine's plain rounds (GRPO "
        "groups, control rollouts): 'dynamic' (finished rows leave the batch); 'static' "
        "(every shape fixed, the decode step compiled into a CUDA graph on GPUs: "
        "`benchmarks/gpu_bench.sh` compares the two; eager and no faster on CPU). MInTRL's "
        "chunked rounds keep their own per-row caches either way.")
    iterations: int = Field(40, ge=1, description="RL iterations (rollout + optimisation).")
    iterations_per_job: int = Field(
        10, ge=1, description="Iterations per Snakemake job (one model load); a killed job "
        "resumes from its last complete iteration.")
    eval_every: int = Field(
        20, ge=1, description="Evaluate (and keep) the checkpoint every K iterations; the final "
        "one is always evaluated.")
    prompts_per_iteration: int = Field(32, ge=1, description="Training prompts per iteration.")
    group_size: int = Field(8, ge=2, description="GRPO: rollouts per prompt (one group).")
    n_semi: int = Field(4, ge=1, description="MInTRL: semi-on-policy rollouts per prompt.")
    n_control: int = Field(
        4, ge=1, description="MInTRL: pure on-policy control rollouts per prompt (V̂ comes from "
        "these only); n_semi + n_control = group_size keeps the rollout budget equal.")
    chunk_tokens: int = Field(16, ge=1, description="MInTRL C: policy tokens per chunk.")
    max_reviews: int = Field(
        12, ge=0, description="MInTRL R: judge reviews per rollout (reviews, not corrections).")
    correction_tokens: int = Field(16, ge=1, description="MInTRL L: tokens per correction.")
    intervener_kv_cache: bool = Field(
        True, description="MInTRL: the intervener keeps one KV cache per rollout across rounds "
        "(feeds only tokens it has not seen; needs a vocabulary shared with the policy). "
        "false: each correction re-encodes the row's prompt and retained prefix (no second "
        "cache for the whole batch: the memory-light choice for a large intervener).")
    judge: Literal["oracle", "likelihood", "chat"] = Field(
        "oracle", description="MInTRL judge: the task's step oracle; the teacher's per-step "
        "likelihood (flags a step with a token below judge_threshold); or the teacher as a "
        "prompted chat LLM (config/prompts/judge.txt).")
    judge_threshold: float = Field(
        -4.0, lt=0, description="Likelihood judge: a step is wrong when the teacher gives one of "
        "its tokens a log-prob below this.")
    judge_miss_rate: float = Field(
        0.0, ge=0, le=1, description="Ablation: share of flagged errors the judge misses.")
    judge_false_alarm_rate: float = Field(
        0.0, ge=0, le=1, description="Ablation: share of clean reviews where it flags a step.")
    wrong_correction_rate: float = Field(
        0.0, ge=0, le=1, description="Ablation: share of corrections made wrong "
        "(`wrong_correction`); the share measured is logged as "
        "`intervention/wrong_correction_share`.")
    wrong_correction: Literal["digits", "random"] = Field(
        "digits", description="How a correction is made wrong: `digits`, the digits of its "
        "last number changed (a plausible wrong fact or result); `random`, random tokens.")
    intervener: Literal["teacher", "self", "chat", "self_chat"] = Field(
        "teacher", description="MInTRL intervener: the teacher continuing the text; the policy "
        "itself given the reference solution (self-intervention); the teacher as a prompted "
        "chat LLM (config/prompts/intervene.txt); or the policy as that prompted chat LLM "
        "(self-intervention where problems have no reference solution).")
    anchor: Literal["proxy", "const", "intervener"] = Field(
        "proxy", description="Reference score of the regression (docs/design.md §1.2).")
    const_c: float | None = Field(
        None, le=0, description="Const anchor: log-prob per intervention token; default: the "
        "measured in the phase's first iteration by `const_c_rule`.")
    const_c_rule: Literal["stability", "intervener"] = Field(
        "stability", description="How the Const anchor's c is measured when `const_c` is "
        "unset, once, in the phase's first iteration: 'stability' (π_t's own mean log-prob of "
        "the corrections, raised so that an intervened rollout's extra advantage "
        "β₂·n_int·(c − log π_t) is `const_bonus` times the mean |r − V̂|; capped at 0); "
        "'intervener' (the intervener's own mean token log-prob of its corrections: near 0 for "
        "a teacher that knows the facts, which made Const add about +1 to every intervened "
        "rollout's advantage at β₂ 0.01).")
    const_bonus: float = Field(
        0.5, gt=0, description="Stability rule: the Const anchor's extra advantage of an "
        "intervened rollout, as a share of the iteration's mean |r − V̂| (docs/design.md §1.2: "
        "small next to |r − V̂|).")
    diagnostics_every: int = Field(
        4, ge=1, description="Measure what the update did (π_{t+1} against π_t on the "
        "rollouts: `update/…`, `regression/…`; and `gradient_parts`) at iteration 1 and every "
        "this many after it (1, 1 + k, 1 + 2k, ...). They are passes that do not shape the "
        "weights: taken every iteration (1) they were 15 % of the main command's segment time "
        "(benchmarks/results/main_command_time.md).")
    gradient_parts: bool = Field(
        True, description="Log, on the iterations `diagnostics_every` measures, the gradient "
        "norm each part of the rollouts "
        "contributes at θ = π_t (semi-on-policy policy and intervention tokens, control or "
        "on-policy rollouts) on the first micro-batch, when there are two parts or more: one "
        "extra backward per part, one gradient copy per part held (one process without ZeRO "
        "only; turn off for large models).")
    beta1: float | None = Field(
        None, gt=0, description="Soft value temperature; None is the paper's β₁ → ∞ (mean "
        "control reward).")
    beta2: float = Field(
        0.01, gt=0, description="Regression scale; keep β₂·n_int·|log π_t − c| small next to "
        "|r − V̂| (a prototype collapsed at β₂ >= 0.05 with c = -1).")
    intervention_iterations: int = Field(
        20, ge=0, description="T_I, the teacher phase, an absolute iteration number (so a run "
        "can be extended without moving it): MInTRL's iterations t <= T_I use the judge and "
        "intervener, MENTOR's draw guided samples (their weight decays linearly to 0 at T_I); "
        "later ones are on-policy.")
    n_guided: int = Field(
        4, ge=1, description="MENTOR: teacher-guided samples per prompt; the other "
        "group_size - n_guided are on-policy (same budget as GRPO).")
    guide_quantile: float = Field(
        0.8, gt=0, lt=1, description="MENTOR: τ is this quantile of the iteration's on-policy "
        "token entropies; the teacher's share at a token is α = min(1, H/τ).")
    distill_weight: float = Field(
        1.0, gt=0, description="OPD: scale of the per-token advantage log π_I − log π_old.")
    distill_reward_weight: float = Field(
        0.0, ge=0, description="OPD: weight of the group-normalised reward advantage added to "
        "every token's advantage (0: pure reverse-KL distillation).")
    sft: SFTSpec = Field(default_factory=SFTSpec, description="SFT+GRPO's SFT stage.")
    post_phase_objective: Literal["regression", "grpo"] = Field(
        "regression", description="Objective after the intervention phase.")
    lr: float = Field(2e-5, gt=0, description="AdamW learning rate (constant).")
    weight_decay: float = Field(0.0, ge=0, description="AdamW weight decay.")
    epochs: int = Field(1, ge=1, description="Passes over the iteration's rollouts.")
    minibatch_size: int = Field(
        64, ge=1, description="Sequences per optimizer step; several steps per iteration.")
    micro_batch_size: int = Field(
        32, ge=1, description="Sequences per forward/backward (gradient accumulation).")
    clip_eps: float = Field(0.2, gt=0, description="GRPO ratio clip epsilon.")
    kl_coef: float = Field(
        0.0, ge=0, description="GRPO k3 KL penalty toward the base policy (0: no reference model).")
    adv_eps: float = Field(1e-6, gt=0, description="GRPO: (r - mean) / (std + eps).")
    max_grad_norm: float = Field(1.0, gt=0, description="Gradient clipping.")
    sampling: SamplingSpec = Field(default_factory=SamplingSpec, description="Rollout sampling.")
    deepspeed: DeepSpeedSpec = Field(default_factory=DeepSpeedSpec, description="DeepSpeed.")
    tasks: list[str] | None = Field(
        None, description="Tasks this run trains on (one policy per task); default: all.")

    @field_validator("method")
    @classmethod
    def _registered(cls, name: str) -> str:
        if name not in METHODS:
            raise ValueError(f"unknown method {name!r}; methods: {sorted(METHODS)}")
        return name

    @model_validator(mode="after")
    def _batches(self) -> RunSpec:
        if self.minibatch_size % self.micro_batch_size:
            raise ValueError("minibatch_size must be a multiple of micro_batch_size")
        method = get_method(self.method)
        mixes = method.phase is not None and method.phase.rollout == "mixed-policy"
        if mixes and self.engine == "vllm":
            raise ValueError("engine: MENTOR mixes the policy's and the teacher's distributions "
                             "token by token in one decode loop: use engine: transformers")
        judged = method.phase is not None and method.phase.judge
        if self.teacher_engine == "vllm" and (method.scores_tokens or (
                judged and self.judge == "likelihood")):
            raise ValueError("teacher_engine: vllm serves a teacher that writes text (MInTRL's "
                             "chat judge and interveners); OPD, MENTOR and the likelihood judge "
                             "score tokens with its model: use teacher_engine: transformers")
        if self.generation_cache == "static" and self.engine != "transformers":
            raise ValueError("generation_cache: 'static' is the transformers engine's cache; "
                             f"engine: {self.engine} manages its own")
        if mixes and self.n_guided >= self.group_size:
            raise ValueError(f"n_guided ({self.n_guided}) must be below group_size "
                             f"({self.group_size}): MENTOR's advantages need on-policy samples")
        return self

    @property
    def phase_end(self) -> int:
        """Last iteration of the teacher phase (MInTRL, MENTOR); 0 for other methods."""
        if get_method(self.method).phase is None:
            return 0
        return min(self.iterations, self.intervention_iterations)

    @property
    def rollouts_per_prompt(self) -> int:
        """The rollout budget per prompt and iteration."""
        phase = get_method(self.method).phase
        return self.n_semi + self.n_control if phase and phase.judge else self.group_size

    def diagnosed(self, iteration: int) -> bool:
        """Whether iteration ``iteration`` measures its update (``diagnostics_every``); 0 and 1
        (the first iteration, or a one-off update) always do."""
        return iteration <= 1 or (iteration - 1) % self.diagnostics_every == 0

    def objective_at(self, iteration: int) -> str:
        """Registered objective (mintrl.algo.objectives) used at ``iteration``."""
        method = get_method(self.method)
        if iteration <= self.phase_end:
            return method.phase.objective
        return self.post_phase_objective if method.objective == POST_PHASE else method.objective

    def rollout_mode_at(self, iteration: int) -> str:
        """Registered rollout mode (mintrl.rollout) used at ``iteration``."""
        if iteration <= self.phase_end:
            return get_method(self.method).phase.rollout
        return "on-policy"

    def guided_weight(self, iteration: int) -> float:
        """MENTOR: weight of the guided samples' advantages, 1 at iteration 1 decaying
        linearly to 0 after the teacher phase."""
        if iteration > self.phase_end:
            return 0.0
        return 1.0 - (iteration - 1) / self.phase_end

    def teacher_needed(self, first_iteration: int) -> bool:
        """Whether a segment starting at ``first_iteration`` loads the teacher: OPD always;
        MInTRL (unless it intervenes with itself under the oracle judge) and MENTOR while
        their teacher phase lasts. SFT+GRPO uses it only in its SFT stage."""
        method = get_method(self.method)
        if method.teacher_always:
            return True
        if first_iteration > self.phase_end:
            return False
        if method.phase.judge:
            return self.intervener != "self" or self.judge != "oracle"
        return True


