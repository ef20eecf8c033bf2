"""The pipeline's files: what each Snakemake rule reads, its params, and what each target
needs, computed from the resolved config. The rules (``workflow/rules/*.smk``) hold no logic:
they name these methods, each called with the job's wildcards (Snakemake input and params
functions), and unit tests call them directly.

Paths are relative to the working directory (``results/...``). A run's checkpoints chain
through its segments: ``segment_init`` of a segment is ``checkpoint_dir`` of the iteration
before its start; kept iterations (evaluated or final) live under ``iter_<i>/``, the others
are temporary hand-offs under ``iter_<i>/handoff/``.
"""

from __future__ import annotations

import re

from mintrl.config import Config
from mintrl.config.derived_runs import CLAIMS_GROUP
from mintrl.config.runs import (
    ROLES,
    kept_iterations,
    lab_model,
    lab_seeds,
    lab_suffix,
    reference_run,
    resolve_runs,
    run_lab_seed,
    segment_ends,
    varies_a_knob,
)
from mintrl.job_settings import JobSettings
from mintrl.later_targets import LaterTargets
from mintrl.methods import get_method

FACT_TOY_SPLITS = ["train", "validation", "easy", "medium", "hard"]
LENGTH_TOY_SPLITS = ["train", "validation", "easy", "hard"]
# One summary per target (scope): its tables and figures.
SUMMARY_FILES = {
    "table": "results/summary/{scope}/table.md",
    "csv": "results/summary/{scope}/table.csv",
    "quality": "results/summary/{scope}/quality.md",
    "stats": "results/summary/{scope}/table_stats.csv",
    "reward": "results/summary/{scope}/reward.png",
    "curves": "results/summary/{scope}/curves.png",
    "pass1": "results/summary/{scope}/pass1.png",
}
# Only for a target where a numeric setting varies alone (an ablation of C, R, L, T_I, c, beta2).
KNOBS_FILE = "results/summary/{scope}/knobs.png"


def one_of(names) -> str:
    """Regex for a wildcard constraint: exactly one of ``names``."""
    return "|".join(map(re.escape, names)) or "(?!)"  # "(?!)": matches nothing


class Pipeline(JobSettings, LaterTargets):
    """The files of one resolved config's pipeline (``cfg``: a validated :class:`Config`)."""

    def __init__(self, cfg: Config, claims_file: str = "config/claims.yaml"):
        self.cfg = cfg
        self.claims_file = claims_file  # the paper's claims (mintrl.report.claims)
        self.tasks = sorted(cfg.tasks)
        self.toy_tasks = [t for t in self.tasks if cfg.tasks[t].kind == "toy"]  # pre-trained
        self.dataset_tasks = [t for t in self.tasks if cfg.tasks[t].kind == "dataset"]  # fetched
        self.benchmarks = sorted({b for t in self.dataset_tasks for b in cfg.tasks[t].benchmarks})
        self.fact_toys = [t for t in self.toy_tasks if cfg.tasks[t].facts is not None]
        self.length_toys = [t for t in self.toy_tasks if cfg.tasks[t].facts is None]
        self.runs = resolve_runs(cfg)  # base run + overrides + (lab seed, RL seed), by name
        self.reference = reference_run(cfg, self.runs)  # the run every ablation table shows
        # Lab seeds: lab k's base and teacher are pre-trained with seeds offset by k. Lab 0
        # keeps the plain names (rule pretrain: base, teacher); the others are base-lab1,
        # teacher-lab1, ... (rule pretrain_lab), values of the `role` wildcard.
        self.labs = sorted({0, *lab_seeds(self.runs)})
        self.lab_models = [lab_model(role, k) for k in self.labs for role in ROLES]
        self.later_lab_models = [m for m in self.lab_models if m not in ROLES]
        self.ablations = sorted({r.group for r in self.runs.values()}
                                - {"main", "tune", CLAIMS_GROUP})
        # what `snakemake sweep` makes; `claims` (its reproduced claims over more pairs) follows
        self.scopes = ["main", "main_table", "sweep", *(f"ablation_{g}" for g in self.ablations)]
        self.tune_runs = [n for n, r in self.runs.items() if r.group == "tune"]
        self.knob_scopes = [s for s in self.scopes
                            if varies_a_knob(self.runs, self.scope_runs(s), self.reference)]
        self.plain_scopes = [s for s in self.scopes if s not in self.knob_scopes] + ["claims"]
        self.target_scopes = [*self.scopes, "claims"]

    def split_files(self, wildcards):
        """A toy's splits: with a fact table easy, medium and hard differ by the facts they
        look up; the length toy (no table) has easy and hard, which differ by length."""
        splits = FACT_TOY_SPLITS if wildcards.task in self.fact_toys else LENGTH_TOY_SPLITS
        return [f"results/data/{wildcards.task}/{split}.parquet" for split in splits]

    def eval_split_files(self, wildcards):
        """A task's evaluation splits: a toy's easy and hard, a dataset task's benchmarks."""
        splits = self.cfg.tasks[wildcards.task].eval_splits
        return [f"results/data/{wildcards.task}/{split}.parquet" for split in splits]

    # --- dataset tasks: files from outside, pinned (rules/fetch.smk) ---
    def source_file(self, task, name):
        """Where prepare reads a dataset source: a local path as given (Snakemake tracks it),
        else the folder fetch_data links under results/raw/."""
        src = self._source(task, name)
        return src.path if src.local else f"results/raw/{task}/{name}"

    def train_source(self, wildcards):
        """The training parts, in the config's order."""
        return [
            self.source_file(wildcards.task, name) for name in self.cfg.tasks[wildcards.task].train
        ]

    def benchmark_source(self, wildcards):
        return self.source_file(wildcards.task, wildcards.split)

    def lab_evaluations(self, labs):
        """The base's and the teacher's evaluations of lab seeds `labs` on every task."""
        return [
            f"results/eval/lab/{t}/{lab_model(role, k)}/metrics.json"
            for t in self.tasks
            for role in ROLES
            for k in labs
        ]

    # The config a job depends on, passed as its `settings` param (Snakemake reruns a job when its
    # params change): editing one task's teacher reruns that teacher and what follows, only.

    # --- RL runs: segments of iterations_per_job iterations, chained through these functions ---
    def run_model(self, task, run, role):
        """The lab model a run starts from (`base`) or asks (`teacher`): its lab seed's."""
        return f"results/models/{task}/{lab_model(role, run_lab_seed(self.runs, run))}"

    def run_base(self, wildcards):
        return self.run_model(wildcards.task, wildcards.run, "base")

    def run_teacher(self, wildcards):
        return self.run_model(wildcards.task, wildcards.run, "teacher")

    def run_prompts(self, wildcards):
        """The training prompts the run's own base filtered (rules filter_prompts{,_lab})."""
        suffix = lab_suffix(run_lab_seed(self.runs, wildcards.run))
        return f"results/data/{wildcards.task}/train_filtered{suffix}.parquet"

    def kept(self, run):
        """Evaluated and kept iterations of a run (the main command's stop included)."""
        return kept_iterations(self.runs[run].spec, self.runs[run].stop)

    def ends(self, run):
        """Last iteration of each of the run's segment jobs."""
        return segment_ends(self.runs[run].spec, self.runs[run].stop)

    def _is_kept(self, run, it):
        return int(it) in self.kept(run)

    def checkpoint_dir(self, task, run, it):
        """Model after iteration `it`: kept (evaluated or final) or a temporary hand-off."""
        if int(it) == 0:
            if (
                run in self.runs and get_method(self.runs[run].spec.method).sft_start
            ):  # RL from its SFT
                return f"results/runs/{task}/{run}/sft/model"
            return self.run_model(task, run, "base")
        if self._is_kept(run, it):
            return f"results/runs/{task}/{run}/iter_{it}/model"
        return f"results/runs/{task}/{run}/iter_{it}/handoff/model"

    def optimizer_dir(self, task, run, it):
        if self._is_kept(run, it):
            return f"results/runs/{task}/{run}/iter_{it}/optim"
        return f"results/runs/{task}/{run}/iter_{it}/handoff/optim"

    def segment_metrics(self, task, run, end):
        if self._is_kept(run, end):
            return f"results/runs/{task}/{run}/iter_{end}/segment.json"
        return f"results/runs/{task}/{run}/iter_{end}/handoff.json"

    def segment_start(self, wildcards):
        """First iteration of the segment that ends at iteration `it`."""
        all_ends = self.ends(wildcards.run)
        end = int(wildcards.it)
        if end not in all_ends:
            raise ValueError(
                f"run {wildcards.run}: no segment ends at iteration {end} (ends: {all_ends})"
            )
        i = all_ends.index(end)
        return 1 if i == 0 else all_ends[i - 1] + 1

    def segment_init(self, wildcards):
        return self.checkpoint_dir(wildcards.task, wildcards.run, self.segment_start(wildcards) - 1)

    def segment_init_optim(self, wildcards):
        start = self.segment_start(wildcards)
        return [] if start == 1 else self.optimizer_dir(wildcards.task, wildcards.run, start - 1)

    def segment_teacher(self, wildcards):
        """The teacher checkpoint, for segments whose method uses it then
        (RunSpec.teacher_needed)."""
        if self.runs[wildcards.run].spec.teacher_needed(self.segment_start(wildcards)):
            return self.run_teacher(wildcards)
        return []

    def teacher_flag(self, wildcards, input):
        return f"--teacher {input.teacher}" if input.teacher else ""

    def segment_launcher(self, wildcards, resources):
        # Data parallelism: one process per GPU the job asks for (`gpu`, e.g. the profile's
        # `segment: {gpu: 4}`; with vLLM tensor parallelism, `gpu` / `tp` processes), or the
        # `ranks` resource when set (CPU ranks too). torchrun --standalone picks a free port, so
        # parallel jobs on one node do not collide. "--": torchrun would read our --run as its own
        # --run-path.
        tp = max(int(getattr(resources, "tp", 1) or 1), 1)
        ranks = int(getattr(resources, "ranks", 0) or int(getattr(resources, "gpu", 0) or 0) // tp)
        if ranks <= 1:
            return "python -m mintrl.segment"
        return (
            f"python -m torch.distributed.run --standalone --nproc_per_node {ranks} "
            "-m mintrl.segment --"
        )

    def tp_flag(self, wildcards, resources):
        # vLLM tensor parallelism: the job's `tp` resource (GPUs one engine spans; default 1).
        tp = int(getattr(resources, "tp", 1) or 1)
        return f"--tensor-parallel {tp}" if tp > 1 else ""

    def init_optim_flag(self, wildcards, input):
        return f"--init-optim {input.init_optim}" if input.init_optim else ""

    def run_tasks(self, run):
        return self.runs[run].tasks if run in self.runs else self.tasks

    def run_segment_metrics(self, wildcards):
        """A tracked run's segment files up to iteration `it` (what a target ran of it)."""
        if wildcards.tracked not in self.runs:
            return []
        return [
            self.segment_metrics(t, wildcards.tracked, e)
            for t in self.run_tasks(wildcards.tracked)
            for e in self.ends(wildcards.tracked)
            if e <= int(wildcards.it)
        ]

    def run_sft_metrics(self, wildcards):
        """SFT+GRPO's SFT stage metrics (its compute), logged with the run."""
        run = self.runs.get(wildcards.tracked)
        if run is None or not get_method(run.spec.method).sft_start:
            return []
        return [f"results/runs/{t}/{wildcards.tracked}/sft/metrics.json" for t in run.tasks]

    def run_evaluations(self, run, upto=None, tasks=None):
        """Evaluation metrics of a run: its lab's base policy (iteration 0) and each kept
        checkpoint up to iteration `upto` (default: all), on `tasks` (default: the run's). A lab's
        base or teacher (`base`, `teacher-lab1`, ...: each tracked as a run of its own) has its
        evaluation only."""
        tasks = self.run_tasks(run) if tasks is None else tasks
        if run not in self.runs:  # a lab's base or teacher, tracked as a run of its own
            return [f"results/eval/lab/{t}/{run}/metrics.json" for t in tasks]
        base_model = lab_model("base", run_lab_seed(self.runs, run))
        base = [f"results/eval/lab/{t}/{base_model}/metrics.json" for t in tasks]
        return base + [
            f"results/eval/{t}/{run}/iter_{it}/metrics.json"
            for t in tasks
            for it in self.kept(run)
            if upto is None or it <= upto
        ]

    def tracked_evaluations(self, wildcards):
        return self.run_evaluations(wildcards.tracked, int(wildcards.it))

    # --- targets: the main command runs the main table's first pairs; named targets the rest ---

    def scope_runs(self, scope):
        """Runs of a target: `main` (the main command: the main table's first (lab seed, RL seed)
        pair of each row), `main_table` (all its pairs), `ablation_<group>` (with
        `ablation_reference`'s run), `sweep` (every run)."""
        if scope == "main":
            return [n for n, r in self.runs.items() if r.group == "main" and r.primary]
        if scope == "main_table":
            return [n for n, r in self.runs.items() if r.group == "main"]
        if scope == "sweep":
            return [n for n, r in self.runs.items() if r.group not in ("tune", CLAIMS_GROUP)]
        if scope == "claims":
            return self.claim_runs()
        group = [n for n, r in self.runs.items() if f"ablation_{r.group}" == scope]
        return ([self.reference] if self.reference else []) + group

    def scope_labs(self, scope):
        """Lab seeds of a target's runs: its base and teacher rows average over these."""
        return lab_seeds({r: self.runs[r] for r in self.scope_runs(scope)})

    def scope_tasks(self, scope, run):
        """Tasks of a run a target uses: an ablation's reference only on the ablation's tasks."""
        if scope.startswith("ablation_") and run == self.reference:
            used = {
                t for r in self.scope_runs(scope) if r != self.reference for t in self.runs[r].tasks
            }
            return [t for t in self.runs[run].tasks if t in used]
        return list(self.runs[run].tasks)

    def scope_upto(self, scope, run):
        """Where a target stops a run: the main command and `main_table` at `main_iterations`
        (one table, one pair or all), an ablation's reference where the ablation's runs end (a
        group of shorter runs, the control's, is compared at its own length: a kept iteration
        of the reference), others (the sweep) at the end."""
        if scope in ("main", "main_table"):
            return self.runs[run].stop
        if scope.startswith("ablation_") and run == self.reference:
            group = [self.runs[r].spec.iterations for r in self.scope_runs(scope) if r != run]
            end = min(max(group, default=self.runs[run].spec.iterations),
                      self.runs[run].spec.iterations)
            if end not in self.kept(run):
                raise ValueError(f"{scope}: its runs end at iteration {end}, where the "
                                 f"reference run {run} keeps no checkpoint ({self.kept(run)}); "
                                 "set the group's iterations to one of those")
            return end
        return self.runs[run].spec.iterations

    def scope_evaluations(self, scope):
        runs = [
            f
            for r in self.scope_runs(scope)
            for f in self.run_evaluations(r, self.scope_upto(scope, r), self.scope_tasks(scope, r))
        ]
        return sorted(set(runs + self.lab_evaluations(self.scope_labs(scope))))

    def scope_checkpoints(self, scope):
        """Evaluated and final checkpoints: products of the pipeline, so deleting one reruns it."""
        return self._scope_points(scope, self.kept, self.checkpoint_dir)

    def scope_segment_metrics(self, scope):
        return self._scope_points(scope, self.ends, self.segment_metrics)

    def _scope_points(self, scope, points, path):
        """``path(task, run, i)`` for each of a target's runs and tasks, and each iteration
        ``i`` of ``points(run)`` up to where the target stops the run."""
        return [
            path(t, r, i)
            for r in self.scope_runs(scope)
            for t in self.scope_tasks(scope, r)
            for i in points(r)
            if i <= self.scope_upto(scope, r)
        ]

    def scope_tracking(self, scope):
        """MLflow markers of a target: each run logged up to where the target stops it."""
        # an ablation's reference is tracked by the targets it belongs to (all its tasks)
        runs = [
            f"results/tracking/{r}/upto_{self.scope_upto(scope, r)}.json"
            for r in self.scope_runs(scope)
            if not (scope.startswith("ablation_") and r == self.reference)
        ]
        labs = [f"results/tracking/{lab_model(role, k)}/upto_0.json"  # every row of the table
                for k in self.scope_labs(scope) for role in ROLES]
        return [*labs, *runs]

    def summary_files(self, scope):
        files = [*SUMMARY_FILES.values(), *([KNOBS_FILE] if scope in self.knob_scopes else [])]
        return [f.format(scope=scope) for f in files]

    def summary_evaluations(self, wildcards):
        return self.scope_evaluations(wildcards.scope)

    def summary_segments(self, wildcards):
        return self.scope_segment_metrics(wildcards.scope)

    def summary_order(self, wildcards):
        return ["base", *self.scope_runs(wildcards.scope), "teacher"]

    def summary_artifacts(self, wildcards):
        return self.summary_files(wildcards.scope)

    def target(self, scope):
        """Everything a target produces: the evaluations of its lab seeds' base and teacher, its
        runs' kept checkpoints, its summary, and MLflow (its runs, each lab's base evaluation, and
        a run holding its summary)."""
        return [
            *self.lab_evaluations(self.scope_labs(scope)),
            *self.scope_checkpoints(scope),
            *self.summary_files(scope),
            *self.scope_tracking(scope),
            f"results/tracking/summary-{scope}.json",
        ]
