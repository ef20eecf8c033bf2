"""The configuration model: the single source of truth for every key, its meaning and default.

``load_config(path)`` reads YAML and validates it; a bad key or value raises ``ConfigError``
naming the file and the dotted key.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from mintrl.io import atomic_path
from mintrl.methods import METHODS, POST_PHASE, get_method


class Strict(BaseModel):
    """Unknown keys are errors: a typo must not silently fall back to a default."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class DifficultyRange(Strict):
    """Inclusive range of the number of operation steps in a problem."""

    lo: int = Field(ge=1, le=32, description="Fewest operation steps.")
    hi: int = Field(ge=1, le=32, description="Most operation steps.")

    @model_validator(mode="after")
    def _ordered(self) -> DifficultyRange:
        if self.lo > self.hi:
            raise ValueError(f"lo ({self.lo}) must not exceed hi ({self.hi})")
        return self


class ModelArch(Strict):
    """Shape of a toy Qwen3-architecture model."""

    hidden_size: int = Field(128, ge=16, description="Width; must divide by num_heads.")
    intermediate_size: int = Field(512, ge=16, description="MLP width.")
    num_layers: int = Field(2, ge=1, description="Transformer blocks.")
    num_heads: int = Field(4, ge=1, description="Attention heads.")
    num_kv_heads: int = Field(2, ge=1, description="Key/value heads (grouped-query attention).")
    max_positions: int = Field(512, ge=64, description="Longest prompt + response, in tokens.")

    @model_validator(mode="after")
    def _divisible(self) -> ModelArch:
        if self.hidden_size % self.num_heads or self.num_heads % self.num_kv_heads:
            raise ValueError("hidden_size must divide by num_heads, num_heads by num_kv_heads")
        return self


# A lab seed k pre-trains with the role's seed + LAB_SEED_STRIDE * k: 0 for lab 0 (its models
# stay bit for bit what they were), and distinct across labs and roles while role seeds stay
# below it.
LAB_SEED_STRIDE = 1000


class PretrainSpec(Strict):
    """How one toy model is pre-trained from scratch (next-token loss on responses only)."""

    # keys that do not change the trained weights: left out of the job's Snakemake params (a
    # change must not rerun finished models) and of the resume state's fingerprint
    RESUME_ONLY_KEYS: ClassVar[frozenset[str]] = frozenset({"checkpoint_every"})

    arch: ModelArch = Field(default_factory=ModelArch, description="Model shape.")
    difficulties: DifficultyRange = Field(
        description="Problem lengths it is trained on (the length toy: the base's upper end "
        "below the hard split is its gap)."
    )
    facts: Literal["true", "gapped"] = Field(
        "true", description="What its data shows of the task's fact table (`tasks.<task>."
        "facts`): `true` every entry's true value (the teacher); `gapped` the known entries, "
        "the partial ones with label noise, never the unknown ones (the base).")
    steps: int = Field(800, ge=1, description="Optimizer steps (fixed count: deterministic).")
    batch_size: int = Field(64, ge=1, description="Sequences per step.")
    length_buckets: int = Field(
        8, ge=1, description="Micro-batches per step, grouped by length to cut padding "
        "(2.5x faster than one padded batch on the toy, same loss)."
    )
    lr: float = Field(3e-3, gt=0, description="Peak AdamW learning rate (cosine decay).")
    warmup_steps: int = Field(50, ge=0, description="Linear warm-up steps.")
    privileged_fraction: float = Field(
        0.15, ge=0, le=1, description="Share of examples whose prompt carries the reference "
        "solution, so the model can act as its own intervener (self-intervention)."
    )
    seed: int = Field(
        0, ge=0, lt=LAB_SEED_STRIDE, description="Initialisation and data seed, added to the "
        "global seed and to 1000 x the lab seed (runs.<i>.lab_seeds); below 1000 so that no "
        "two labs' models share a seed.")
    threads: int = Field(
        2, ge=1, description="torch threads of the pre-training job. Set here, not by the "
        "cores Snakemake grants: the order of a float sum follows the thread count, so "
        "`snakemake --cores 1` would otherwise pre-train other weights.")
    checkpoint_every: int = Field(
        100, ge=0, description="Steps between the resume states of a pre-training job "
        "(`<out>.resume.pt`: weights, optimizer, data stream), from which a killed job goes "
        "on with the same final weights; deleted when the model is written. 0: none (a killed "
        "job starts over)."
    )


class SplitSizes(Strict):
    """Problems per split (the evaluation splits need >= 100 for a usable Pass@1)."""

    train: int = Field(512, ge=1, description="RL training prompts (mixed difficulty).")
    validation: int = Field(128, ge=1, description="Tuning only; never reported.")
    easy: int = Field(200, ge=1, description="Easy evaluation split.")
    medium: int = Field(100, ge=1, description="Medium evaluation split (tasks with facts).")
    hard: int = Field(200, ge=1, description="Hard evaluation split.")


class FactMix(Strict):
    """Shares of training prompts by the kind of fact they look up (normalised)."""

    known: float = Field(0.25, ge=0, description="Known facts only.")
    partial: float = Field(0.5, ge=0, description="One partial fact.")
    unknown: float = Field(0.25, ge=0, description="One unknown fact.")

    @model_validator(mode="after")
    def _some(self) -> FactMix:
        if self.known + self.partial + self.unknown <= 0:
            raise ValueError("the shares must not all be 0")
        return self


class FactSpec(Strict):
    """The toy's knowledge gap (mintrl/tasks/facts.py): a secret table of two-digit facts that
    problems look up; the base's data shows some always, some with label noise, some never."""

    known: int = Field(4, ge=1, description="Entries the base's data always shows truly.")
    partial: list[Annotated[float, Field(gt=0, lt=1)]] = Field(
        default_factory=lambda: [0.2, 0.35, 0.5], description="One entry per value: the share "
        "of the base's examples that show its true value (the rest show a decoy).")
    unknown: int = Field(3, ge=1, description="Entries the base's data never shows.")
    decoys: int = Field(2, ge=1, description="Wrong values a partial entry shows the base.")
    lookups: DifficultyRange = Field(
        default_factory=lambda: DifficultyRange(lo=1, hi=2),
        description="Entries a problem looks up (some of its operation steps).")
    train_mix: FactMix = Field(default_factory=FactMix, description="Kinds of the training "
                               "prompts (the validation split has equal thirds).")
    seed: int = Field(0, ge=0, description="The table's seed: the task's world, the same for "
                      "every lab seed and role.")

    @model_validator(mode="after")
    def _fits(self) -> FactSpec:
        if not self.partial:
            raise ValueError("`partial`: at least one entry (the medium split needs one)")
        self.table()  # FactTable.draw's own checks (at most 10 entries), named at this key
        return self

    def table(self):
        """The task's ``FactTable``."""
        from mintrl.tasks.facts import FactTable

        return FactTable.draw(self.known, tuple(self.partial), self.unknown, self.decoys,
                              (self.lookups.lo, self.lookups.hi), self.seed)


class TaskSpec(Strict):
    """One toy task: its splits and the base policy and teacher trained on it."""

    kind: Literal["toy"] = Field("toy", description="A toy task: problems generated by the "
                                 "registered task of this name, models pre-trained here.")
    facts: FactSpec | None = Field(
        None, description="The fact table, which makes the gap one of knowledge: `easy` "
        "looks up known facts, `medium` one partial fact, `hard` one unknown fact, all at "
        "the same lengths. None: the length toy (`hard` is longer than the base ever saw).")
    easy: DifficultyRange = Field(description="Difficulty of the easy evaluation split.")
    medium: DifficultyRange | None = Field(
        None, description="Difficulty of the medium evaluation split (tasks with `facts` "
        "only, where it is required).")
    hard: DifficultyRange = Field(description="Difficulty of the hard evaluation split.")
    train: DifficultyRange = Field(
        description="Difficulty of RL training and validation prompts: spans easy to hard so "
        "on-policy RL has signal on some prompts and none on the hardest."
    )
    sizes: SplitSizes = Field(default_factory=SplitSizes, description="Split sizes.")
    max_new_tokens: int = Field(128, ge=1, description="Response length limit, in tokens.")
    base: PretrainSpec = Field(description="The base policy (with a knowledge gap).")
    teacher: PretrainSpec = Field(description="The stronger teacher / intervener.")
    rl: dict[str, Any] = Field(
        default_factory=dict, description="Keys of the base run changed for every run on this "
        "task (before a run's own overrides), e.g. C / R / L per domain.")
    chat: bool = Field(False, description="Render prompts with the tokenizer's chat template "
                       "(the toy's character tokenizer has none).")

    @model_validator(mode="after")
    def _medium_with_facts(self) -> TaskSpec:
        if self.facts is not None and self.medium is None:
            raise ValueError("`medium`: required with `facts` (the split of partial facts)")
        if self.facts is None and self.medium is not None:
            raise ValueError("`medium`: only with `facts` (the length toy has no partial gap)")
        if self.facts is None and "gapped" in (self.base.facts, self.teacher.facts):
            raise ValueError("`facts: gapped` needs the task's `facts` table")
        return self

    @property
    def eval_splits(self) -> tuple[str, ...]:
        return ("easy", "medium", "hard") if self.facts is not None else ("easy", "hard")


SPLIT_NAME = r"^[a-z][a-z0-9_]*$"
RESERVED_SPLITS = ("train", "validation", "train_filtered")


class DataSource(Strict):
    """One dataset file: a local path, a file of a Hugging Face dataset repo at a revision, or
    a release URL with its sha256 (the last two fetched by the ``fetch_data`` rule)."""

    format: str = Field(description="Reader (mintrl.datasets.READERS): matharena, "
                        "acereason_math, livecodebench, humaneval_plus, mbpp_plus, deepcoder.")
    path: str | None = Field(None, description="A local file (Parquet, JSONL or JSONL.gz), "
                             "or a folder of them (shards, read in name order).")
    hub: str | None = Field(None, description="A Hugging Face dataset repo id.")
    file: str | None = Field(None, description="The file inside the `hub` repo, or a pattern "
                             "for a split's shards (`taco/train-*.parquet`).")
    url: str | None = Field(None, pattern=r"^https://", description="A release file to "
                            "download (checked against `sha256`).")
    sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$",
                               description="Content hash of the `url` file.")
    revision: str | None = Field(
        None, min_length=1, description="The commit of the `hub` repo (required with `hub`; "
        "40 hex digits pin it, a branch name does not); for a local file, the commit it was "
        "taken from. Pickled LiveCodeBench tests are decoded only under a 40-hex revision.")
    options: dict[str, Any] = Field(default_factory=dict,
                                    description="Reader keyword arguments (e.g. `source`).")
    limit: int | None = Field(None, ge=1, description="Read only the first N problems.")

    @model_validator(mode="after")
    def _one_place(self) -> DataSource:
        given = [k for k in ("path", "hub", "url") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of `path`, `hub` and `url` (got {given or 'none'})")
        if self.hub is not None and (self.file is None or self.revision is None):
            raise ValueError("a `hub` source needs `file` and a `revision`")
        if self.url is not None and self.sha256 is None:
            raise ValueError("a `url` source needs its `sha256`")
        return self

    @property
    def local(self) -> bool:
        return self.path is not None


class ModelRef(Strict):
    """A pre-trained model: a local Hugging Face folder, or a hub repo at a pinned revision
    (fetched by the ``fetch_model`` rule)."""

    path: str | None = Field(None, description="A local Hugging Face model folder.")
    hub: str | None = Field(None, description="A Hugging Face model repo id.")
    revision: str | None = Field(None, min_length=1, description="Commit or tag of `hub` "
                                 "(required with `hub`).")

    @model_validator(mode="after")
    def _one_place(self) -> ModelRef:
        if (self.path is None) == (self.hub is None):
            raise ValueError("give exactly one of `path` and `hub`")
        if self.hub is not None and self.revision is None:
            raise ValueError("a `hub` model needs a `revision`")
        return self


class DatasetTaskSpec(Strict):
    """A task of the paper setting: training prompts and benchmarks read from datasets, a
    registered reward, and pre-trained models."""

    kind: Literal["dataset"] = Field(description="Problems from datasets, models from the hub.")
    reward: Literal["math", "code"] = Field(
        description="Registered task that scores responses: 'math' (math-verify on the last "
        "boxed answer) or 'code' (the sandbox).")
    train: dict[str, DataSource] = Field(
        min_length=1, description="Training prompts by part name (e.g. DeepCoder's subsets), "
        "read in this order; the validation split is held out of them.")
    train_size: int | None = Field(None, ge=1, description="Keep at most this many training "
                                   "prompts (seeded draw); None keeps all.")
    validation_size: int = Field(128, ge=1, description="Training prompts held out for tuning.")
    benchmarks: dict[str, DataSource] = Field(
        min_length=1, description="Evaluation splits by name (the table's columns).")
    on_bad: Literal["skip", "fail"] = Field(
        "skip", description="Unreadable rows: skip them (counted and named in the prepare "
        "log and report) or fail the job.")
    base: ModelRef = Field(description="The policy RL starts from.")
    teacher: ModelRef = Field(description="The judge-intervention model (and OPD's, SFT's, "
                              "MENTOR's teacher).")
    max_new_tokens: int = Field(4096, ge=1, description="Response length limit, in tokens.")
    rl: dict[str, Any] = Field(
        default_factory=dict, description="Keys of the base run changed for every run on this "
        "task (before a run's own overrides), e.g. C / R / L per domain.")
    chat: bool = Field(True, description="Render prompts with the policy's chat template, "
                       "thinking disabled (Qwen3's non-thinking mode).")

    @model_validator(mode="after")
    def _split_names(self) -> DatasetTaskSpec:
        for name in [*self.train, *self.benchmarks]:
            if not re.match(SPLIT_NAME, name) or name in RESERVED_SPLITS:
                raise ValueError(f"source name {name!r}: lower-case letters, digits and _ "
                                 f"only, and not one of {RESERVED_SPLITS}")
        both = sorted(set(self.train) & set(self.benchmarks))
        if both:
            raise ValueError(f"{both}: a name is either a training part or a benchmark")
        return self

    @property
    def eval_splits(self) -> tuple[str, ...]:
        return tuple(self.benchmarks)


def _task_kind(value: Any) -> str:
    kind = value.get("kind", "toy") if isinstance(value, dict) else getattr(value, "kind", "toy")
    return kind if kind in ("toy", "dataset") else "toy"  # an unknown kind fails as a toy


AnyTask = Annotated[Annotated[TaskSpec, Tag("toy")] | Annotated[DatasetTaskSpec, Tag("dataset")],
                    Discriminator(_task_kind)]


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
        "(DESIGN.md §4: 16 x 4096 needs it on one H200); about 20-30 % slower per step.")


class SFTSpec(Strict):
    """SFT+GRPO's supervised stage: the intervention policy's complete trajectories on the
    training prompts, then next-token training on them (DESIGN.md §1.3)."""

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
        "grpo", description="Algorithm, a name in `mintrl.methods.METHODS` (DESIGN.md §1.3): "
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
        0.0, ge=0, le=1, description="Ablation: share of corrections replaced by random tokens.")
    intervener: Literal["teacher", "self", "chat", "self_chat"] = Field(
        "teacher", description="MInTRL intervener: the teacher continuing the text; the policy "
        "itself given the reference solution (self-intervention); the teacher as a prompted "
        "chat LLM (config/prompts/intervene.txt); or the policy as that prompted chat LLM "
        "(self-intervention where problems have no reference solution).")
    anchor: Literal["proxy", "const", "intervener"] = Field(
        "proxy", description="Reference score of the regression (DESIGN.md §1.2).")
    const_c: float | None = Field(
        None, le=0, description="Const anchor: log-prob per intervention token; default: the "
        "intervener's mean token log-prob on its corrections in the phase's first iteration.")
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

    def objective_at(self, iteration: int) -> str:
        """Registered objective (mintrl.objectives) used at ``iteration``."""
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


class RunEntry(Strict):
    """A run of the sweep: the base run (``rl``) + ``overrides``, once per (lab seed, RL seed)
    pair."""

    method: str = Field(description="Method name (a RunSpec.method value).")
    overrides: dict[str, Any] = Field(
        default_factory=dict, description="Keys of the base run to change; dotted keys reach "
        "nested ones (``sampling.temperature``). They also name the run.")
    seeds: list[int] = Field([0], min_length=1, description="RL seeds: one run per seed; the "
                             "main command runs the first, `snakemake main_table` / `sweep` "
                             "all.")
    lab_seeds: list[Annotated[int, Field(ge=0)]] | None = Field(
        None, description="Lab seeds, paired element-wise with `seeds` (same length): run k "
        "starts from the base and teacher pre-trained with lab seed `lab_seeds[k]` (their "
        "seeds + 1000 x lab seed) and trains on the prompts that base filtered, so a row's "
        "spread includes the lab's noise, not one pre-training's luck. Lab seed k > 0 adds "
        "`-lab<k>` to model and run names (`grpo-lab1-s1`). Default: lab seed 0 (the lab the "
        "main command uses) for every RL seed. Toy tasks only: a dataset task's models are "
        "fetched.")
    name: str | None = Field(None, description="Run name instead of the generated one (with "
                             "`-s<seed>`, or `-lab<k>-s<seed>`, when the entry has several "
                             "pairs).")
    group: str = Field(
        "main", pattern=r"^[a-z][a-z0-9_]*$", description="Which table the run belongs to: "
        "'main' (the main table: `snakemake`, `snakemake main_table`) or an ablation "
        "(`snakemake ablation_<group>`); `snakemake sweep` runs every group.")

    @field_validator("lab_seeds")
    @classmethod
    def _paired(cls, labs: list[int] | None, info: ValidationInfo) -> list[int] | None:
        seeds = info.data.get("seeds")  # absent when `seeds` itself failed
        if labs is not None and seeds is not None and len(labs) != len(seeds):
            raise ValueError(f"{len(labs)} lab seeds for {len(seeds)} seeds: they pair "
                             "element-wise (run k: lab_seeds[k], seeds[k])")
        return labs

    @property
    def pair_lab_seeds(self) -> list[int]:
        """The lab seed of each RL seed's run (lab 0 for each when ``lab_seeds`` is unset)."""
        return list(self.lab_seeds) if self.lab_seeds is not None else [0] * len(self.seeds)


class TuneSpec(Strict):
    """`snakemake tune`: short runs of each main-table row over its grid, scored on the
    validation split (never the reported splits)."""

    iterations: int = Field(16, ge=1, description="Iterations of each tuning run.")
    tasks: list[str] = Field(["arith"], min_length=1, description="Tasks tuned on.")
    samples: int = Field(8, ge=1, description="Validation samples per problem.")
    grids: dict[str, dict[str, list[Any]]] = Field(
        default_factory=dict, description="Per main-table row: dotted key -> values tried "
        "(their product). Every row gets the same number of points: an equal tuning budget.")


class Config(Strict):
    """Root of config/config.yaml."""

    seed: int = Field(0, ge=0, description="Global seed; every stage derives its seeds from it.")
    device: Literal["cpu", "cuda"] = Field(
        "cpu", description="Where models run: 'cpu' (the embedded default) or 'cuda'.")
    vllm_gpu_memory: float = Field(
        0.4, gt=0, le=0.95, description="Share of a GPU's memory each vLLM engine takes "
        "(vLLM's `gpu_memory_utilization`). A segment may hold two beside the trainer (a vLLM "
        "policy and a vLLM teacher): their shares and DeepSpeed's share must fit in one GPU. "
        "Evaluation and the filter hold one engine and nothing else (raise it there with "
        "`--config` overrides if they run out of KV cache).")
    threads: int = Field(
        1, ge=1, description="torch threads per process: two jobs with two threads each on two "
        "cores were 20-40x slower than one thread each."
    )
    tasks: dict[str, AnyTask] = Field(
        description="Tasks by name: toy tasks (`kind: toy`, the default) by registered name; "
        "dataset tasks (`kind: dataset`) under any name.")
    evaluation: EvalSpec = Field(default_factory=EvalSpec, description="Evaluation settings.")
    filter: FilterSpec = Field(default_factory=FilterSpec, description="Training-prompt filter.")
    rl: RunSpec = Field(default_factory=RunSpec, description="The base run every run overrides.")
    runs: list[RunEntry] = Field(
        default_factory=list, description="The sweep: runs = base run + overrides + (lab "
        "seed, RL seed) pair.")
    tune: TuneSpec = Field(default_factory=TuneSpec, description="Tuning (`snakemake tune`).")
    tuned: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="Chosen values per main-table row, written by "
        "`python -m mintrl.tune --apply` with the grid and date; applied on top of the row's "
        "overrides (they do not change run names).")
    ablation_reference: str | None = Field(
        None, description="A main-table row (entry name) shown in every ablation table as the "
        "reference point, on the ablation's tasks (its first (lab seed, RL seed) pair).")
    main_iterations: int | None = Field(
        None, ge=1, description="Where the main command (`snakemake`) stops the main table's "
        "runs; `snakemake main_table` / `sweep` continue the same runs to their `iterations`. "
        "None: no shorter main command.")
    experiment: str = Field("mintrl", min_length=1, description="MLflow experiment name.")
    tracking_uri: str = Field(
        "sqlite:///results/mlflow.db", description="MLflow store (relative to the workdir).")


class ConfigError(ValueError):
    """A config file failed validation; the message names the file and each bad key."""


def _format(err: ValidationError, source: str) -> str:
    lines = [f"invalid config {source}:"]
    for e in err.errors():
        loc = list(e["loc"])
        if loc[:1] == ["tasks"] and len(loc) > 2 and loc[2] in ("toy", "dataset"):
            del loc[2]  # the union's tag, not a key the user wrote
        key = ".".join(str(p) for p in loc) or "<root>"
        lines.append(f"  {key}: {e['msg']}")
    return "\n".join(lines)


def parse_config(data: dict[str, Any], source: str = "<dict>") -> Config:
    """Validate ``data``, including every run of the sweep; errors name the dotted key.
    Top-level keys starting with ``_`` are ignored: they hold YAML anchors (config/paper.yaml)."""
    data = {k: v for k, v in data.items() if not str(k).startswith("_")}
    try:
        cfg = Config.model_validate(data)
    except ValidationError as err:
        raise ConfigError(_format(err, source)) from None
    # Validating a config means resolving every run; mintrl.runs builds on these models, so
    # it is imported here rather than at the top (a cycle otherwise).
    from mintrl.runs import reference_run, resolve_runs

    runs = resolve_runs(cfg, source)
    reference_run(cfg, runs)
    rows = {r.entry for r in runs.values() if r.group == "main"}
    for row in sorted(set(cfg.tuned) - rows):
        raise ConfigError(f"invalid config {source}:\n  tuned.{row}: no main-table row {row!r}; "
                          f"rows: {sorted(rows)}")
    return cfg


def json_schema() -> dict[str, Any]:
    """The JSON schema Snakemake validates the config against, generated from ``Config``."""
    schema = Config.model_json_schema(mode="validation")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}


def write_resolved_config(cfg: Config, path: str | Path) -> str:
    """Write ``cfg`` to ``path`` unless it already holds exactly that; return the path.

    Stages read this file, so they see what Snakemake resolved (files merged, --config
    overrides applied). Left untouched when unchanged, so a re-run rewrites nothing; which
    jobs a change reruns is decided by the per-rule settings params in common.smk.
    """
    path = Path(path)
    text = yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=True)
    if not path.exists() or path.read_text() != text:
        with atomic_path(path) as tmp:
            tmp.write_text(text)
    return str(path)


def load_config(path: str | Path) -> Config:
    path = Path(path)
    with open(path) as f:
        data = yaml.safe_load(f) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"invalid config {path}: the top level must be a mapping")
    return parse_config(data, str(path))


def main(argv: list[str] | None = None) -> None:
    """``python -m mintrl.config --schema OUT``: regenerate the JSON schema file."""
    import argparse
    import json

    ap = argparse.ArgumentParser(prog="python -m mintrl.config",
                                 description="Validate a config or write its JSON schema.")
    ap.add_argument("--schema", type=Path, help="write the JSON schema of the config here")
    ap.add_argument("--check", type=Path, help="validate this config file and list its runs")
    args = ap.parse_args(argv)
    if args.schema:
        with atomic_path(args.schema) as tmp:
            tmp.write_text(json.dumps(json_schema(), indent=2) + "\n")
    if args.check:
        from mintrl.runs import resolve_runs

        cfg = load_config(args.check)
        for name, run in resolve_runs(cfg).items():
            print(f"{name}: method={run.method} group={run.group} tasks={','.join(run.tasks)} "
                  f"iterations={run.spec.iterations}")


if __name__ == "__main__":
    main()
