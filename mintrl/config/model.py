"""The root of the config (``Config``), the sweep's run entries and the tuning grids."""

from __future__ import annotations

import importlib
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from mintrl.config.base import Strict
from mintrl.config.rl import EvalSpec, FilterSpec, RunSpec
from mintrl.config.tasks import AnyTask


class SandboxSpec(Strict):
    """How generated code runs (``mintrl.sandbox``)."""

    unisolated: bool = Field(
        False, description="Run generated code without isolation where neither isolation mode "
        "works (not root with util-linux namespaces, no working bubblewrap): it then reads "
        "the whole filesystem, the run's answer keys included. Off: the code tasks refuse to "
        "run there, with an error saying what to install.")


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
    tuned_as: str | None = Field(
        None, description="Run at this entry's `tuned` values, under this entry's own "
        "overrides (a variant of a tuned row: the corrections-only control with a wrong "
        "intervener). Default: an ablation of the `ablation_reference` row's method runs at "
        "that row's values; any other entry at its own.")

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
    lr: list[float] = Field(
        default_factory=list, description="The learning rates every row is tuned over, crossed "
        "with its own `grids` entry: one grid for all, so a method's step size is not a "
        "confound. At least 3 values spanning at least 30x; empty: each row's own grid only.")
    grids: dict[str, dict[str, list[Any]]] = Field(
        default_factory=dict, description="Per row (a main-table row, or any named run entry, "
        "such as the corrections-only control): its own knob(s), dotted key -> values tried "
        "(their product, times `lr`). Every row gets the same number of points: an equal "
        "tuning budget.")
    score_kinds: list[str] = Field(
        ["partial", "unknown"], min_length=1, description="Fact kinds of the validation "
        "problems whose Pass@1 chooses (a toy's medium and hard); a task without fact kinds "
        "is scored on all of its validation problems.")
    guard_kind: str | None = Field(
        "known", description="Fact kind of the guard: a point whose Pass@1 on these "
        "validation problems minus the base's (paired, problem by problem) has a 95 % "
        "bootstrap interval wholly below 0 is rejected (it forgot the easy skills). None: no "
        "guard.")

    @field_validator("lr")
    @classmethod
    def _spans(cls, lr: list[float]) -> list[float]:
        if lr and (len(lr) < 3 or min(lr) <= 0 or max(lr) < 30 * min(lr) * (1 - 1e-9)):
            raise ValueError(f"{lr}: give at least 3 positive learning rates spanning at least "
                             "30x (a narrower grid moved validation Pass@1 within its noise)")
        return lr


class Config(Strict):
    """Root of config/config.yaml."""

    plugins: list[str] = Field(
        default_factory=list, description="Python modules imported before the rest of the "
        "config is validated: a method, objective or rollout mode one of them registers "
        "(`register_method`, `register_objective`, `ROLLOUT_MODES`) can then be named in `rl` "
        "and `runs`. Each must be importable by every job (installed, or on PYTHONPATH).")
    seed: int = Field(0, ge=0, description="Global seed; every stage derives its seeds from it.")
    device: Literal["cpu", "cuda"] = Field(
        "cpu", description="Where models run: 'cpu' (the embedded default) or 'cuda'.")
    vllm_gpu_memory: float = Field(
        0.4, gt=0, le=0.95, description="Share of a GPU's memory each vLLM engine takes "
        "(vLLM's `gpu_memory_utilization`). A segment may hold two beside the trainer (a vLLM "
        "policy and a vLLM teacher): their shares and DeepSpeed's share must fit in one GPU. "
        "Evaluation and the filter hold one engine and nothing else (raise it there with "
        "`--config` overrides if they run out of KV cache).")
    sandbox: SandboxSpec = Field(default_factory=SandboxSpec,
                                 description="Where and how generated code runs.")
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
        default_factory=dict, description="Chosen values per run entry, written by "
        "`python -m mintrl.tune --apply` with the grid and date; applied on top of the entry's "
        "overrides (they do not change run names). An ablation entry of the "
        "`ablation_reference` row's method without values of its own runs at that row's, "
        "under its own overrides.")
    ablation_reference: str | None = Field(
        None, description="A main-table row (entry name) shown in every ablation table as the "
        "reference point, on the ablation's tasks (its first (lab seed, RL seed) pair).")
    main_iterations: int | None = Field(
        None, ge=1, description="Where the main command (`snakemake`) and `snakemake "
        "main_table` (every pair) stop the main table's runs; `snakemake sweep` continues the "
        "same runs to their `iterations`. None: the main table runs to `iterations`.")
    experiment: str = Field("mintrl", min_length=1, description="MLflow experiment name.")
    tracking_uri: str = Field(
        "sqlite:///results/mlflow.db", description="MLflow store (relative to the workdir).")

    @model_validator(mode="before")
    @classmethod
    def _import_plugins(cls, data: Any) -> Any:
        """Plugins register their methods before ``rl`` and ``runs`` name them."""
        names = data.get("plugins") if isinstance(data, dict) else None
        for name in names if isinstance(names, list) else []:
            try:
                importlib.import_module(str(name))
            except ImportError as err:
                raise ValueError(f"plugins: cannot import {name!r} ({err})") from None
        return data


