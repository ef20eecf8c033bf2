"""Config of the tasks: the toy tasks (generator, splits, the lab's pre-training) and the
paper setting's dataset tasks (pinned sources, fetched models)."""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    Discriminator,
    Field,
    Tag,
    model_validator,
)

from mintrl.config.base import Strict


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
        "the partial ones with label noise, the unknown ones with their misconception above "
        "a uniform floor (the base).")
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
    init: Literal["scratch", "base"] = Field(
        "scratch", description="`scratch`: from a random initialisation; `base` (a teacher "
        "only): from the base of the same task and lab seed, then trained on this role's data "
        "for `steps` steps (the base plus the knowledge it lacks: on the fact toy 300 steps "
        "from the base gave a teacher above the one 1000 steps from scratch gave).")
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

    def not_identity(self) -> set[str]:
        """The keys its weights do not depend on: how often it saves a resume state, and
        `init` at `scratch` (so models made before the key existed keep their identity)."""
        return set(self.RESUME_ONLY_KEYS) | ({"init"} if self.init == "scratch" else set())

    def identity(self) -> dict:
        """The keys its weights depend on (a job's Snakemake params)."""
        return self.model_dump(exclude=self.not_identity())


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
    problems look up; the base's data shows some always, some with label noise, and some
    only as a confident misconception over a thin uniform floor."""

    known: int = Field(4, ge=1, description="Entries the base's data always shows truly.")
    partial: list[Annotated[float, Field(gt=0, lt=1)]] = Field(
        default_factory=lambda: [0.2, 0.35, 0.5], description="One entry per value: the share "
        "of the base's examples that show its true value (the rest show a decoy).")
    unknown: int = Field(3, ge=1, description="Entries whose true value the base's data "
                         "never shows beyond chance: a fixed wrong value (the misconception) "
                         "with a uniform floor (`unknown_floor`).")
    unknown_floor: float = Field(
        0.2, ge=0, lt=1, description="Share of the base's examples of an unknown entry that "
        "show a value drawn uniformly from all 90 (the rest show its misconception): the "
        "floor of mass that leaves the true digits within a sampling method's reach.")
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
                              (self.lookups.lo, self.lookups.hi), self.seed,
                              self.unknown_floor)


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
        if self.base.init != "scratch":
            raise ValueError("`base.init`: the base starts from scratch (`init: base` is for "
                             "the teacher)")
        if self.teacher.init == "base" and self.teacher.arch != self.base.arch:
            raise ValueError("`teacher.init: base` starts from the base's weights: "
                             "`teacher.arch` must equal `base.arch`")
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


