# Helpers for the rules: config validation, run resolution, input functions.
import re

from snakemake.utils import validate

from mintrl.config import parse_config, write_resolved_config
from mintrl.cpu_numerics import kernels
from mintrl.methods import get_method
from mintrl.runs import (
    ROLES,
    RUN_LENGTH_KEYS,
    kept_iterations,
    lab_model,
    lab_seeds,
    lab_suffix,
    reference_run,
    resolve_runs,
    run_lab_seed,
    segment_ends,
    split_lab_model,
)

# One source of truth, two entry points: the pydantic model (its messages name the dotted key,
# it resolves every run, and it reads --config strings such as "41" as numbers) and the JSON
# schema generated from it (python -m mintrl.config --schema ...; a test keeps the committed
# file current), which Snakemake checks on the resolved config.
CFG = parse_config(config, "from " + " + ".join(map(str, workflow.configfiles)) + " + --config")
# set_default=False: the model filled every default; the validator would add the defaults of
# every branch of a union (a toy task's into a dataset task).
validate(CFG.model_dump(mode="json"), "../schemas/config.schema.json", set_default=False)
# Stages read exactly what Snakemake resolved (config files merged, --config overrides applied).
CONFIG_FILE = write_resolved_config(CFG, "results/config/resolved.yaml")
TASKS = sorted(CFG.tasks)
TOY_TASKS = [t for t in TASKS if CFG.tasks[t].kind == "toy"]  # generated, models pre-trained
DATASET_TASKS = [t for t in TASKS if CFG.tasks[t].kind == "dataset"]  # read, models fetched
BENCHMARKS = sorted({b for t in DATASET_TASKS for b in CFG.tasks[t].benchmarks})
# A toy's splits: with a fact table easy, medium and hard differ by the facts they look up;
# the length toy (no table) has easy and hard, which differ by length.
FACT_TOYS = [t for t in TOY_TASKS if CFG.tasks[t].facts is not None]
LENGTH_TOYS = [t for t in TOY_TASKS if CFG.tasks[t].facts is None]
FACT_TOY_SPLITS = ["train", "validation", "easy", "medium", "hard"]
LENGTH_TOY_SPLITS = ["train", "validation", "easy", "hard"]
RUNS = resolve_runs(CFG)  # runs = base run + overrides + (lab seed, RL seed), by name
REFERENCE = reference_run(CFG, RUNS)  # the main-table run every ablation table shows
# Lab seeds: lab k's base and teacher are pre-trained with seeds offset by k (runs.<i>.lab_seeds).
# Lab 0 keeps the names and rules it always had (rule pretrain: base, teacher); the others are
# base-lab1, teacher-lab1, ... (rule pretrain_lab), values of the `role` wildcard.
LABS = sorted({0, *lab_seeds(RUNS)})
LAB_MODELS = [lab_model(role, k) for k in LABS for role in ROLES]
LATER_LAB_MODELS = [m for m in LAB_MODELS if m not in ROLES]  # lab seeds > 0
BASE_MODELS = [lab_model("base", k) for k in LABS]  # each tracked in MLflow under its name
# The CPU kernels every job runs (importing mintrl pinned them, mintrl.cpu_numerics): a param of
# each job that computes with torch, so outputs made with other kernels are made again.
CPU_KERNELS = kernels()


def one_of(names):
    """Regex for a wildcard constraint: exactly one of `names`."""
    return "|".join(map(re.escape, names)) or "(?!)"  # "(?!)": matches nothing


def split_files(wildcards):
    splits = FACT_TOY_SPLITS if wildcards.task in FACT_TOYS else LENGTH_TOY_SPLITS
    return expand("results/data/{task}/{split}.parquet", task=wildcards.task, split=splits)


def eval_split_files(wildcards):
    """A task's evaluation splits: a toy's easy and hard, a dataset task's benchmarks."""
    splits = CFG.tasks[wildcards.task].eval_splits
    return expand("results/data/{task}/{split}.parquet", task=wildcards.task, split=splits)


# --- dataset tasks: files and models from outside, pinned (rules/fetch.smk) ---
def _source(task, name):
    spec = CFG.tasks[task]
    return spec.train[name] if name in spec.train else spec.benchmarks[name]


def source_file(task, name):
    """Where prepare reads a dataset source: a local path as given (Snakemake tracks it),
    else the folder fetch_data links under results/raw/."""
    src = _source(task, name)
    return src.path if src.local else f"results/raw/{task}/{name}"


def train_source(wildcards):
    """The training parts, in the config's order."""
    return [source_file(wildcards.task, name) for name in CFG.tasks[wildcards.task].train]


def benchmark_source(wildcards):
    return source_file(wildcards.task, wildcards.split)


def fetch_data_flags(wildcards):
    src = _source(wildcards.task, wildcards.source)
    if src.url:
        return f"--url {src.url} --sha256 {src.sha256}"
    return f"--hub {src.hub} --file {src.file} --revision {src.revision}"


def fetch_model_flags(wildcards):
    ref = getattr(CFG.tasks[wildcards.task], wildcards.role)
    if ref.path:
        return f"--path {ref.path}"
    return f"--hub {ref.hub} --revision {ref.revision}"


def fetch_model_settings(wildcards):
    return getattr(CFG.tasks[wildcards.task], wildcards.role).model_dump()


def lab_evaluations(labs):
    """The base's and the teacher's evaluations of lab seeds `labs` on every task."""
    return [
        f"results/eval/lab/{t}/{lab_model(role, k)}/metrics.json"
        for t in TASKS
        for role in ROLES
        for k in labs
    ]


# The config a job depends on, passed as its `settings` param (Snakemake reruns a job when its
# params change): editing one task's teacher reruns that teacher and what follows, only.
def prepare_settings(wildcards):
    spec = CFG.tasks[wildcards.task]
    if spec.kind == "dataset":
        keys = {"train", "train_size", "validation_size", "on_bad", "chat", "reward"}
        return {"seed": CFG.seed, "splits": spec.model_dump(include=keys)}
    keys = {"easy", "hard", "train", "sizes"} | ({"medium", "facts"} if spec.facts else set())
    return {"seed": CFG.seed, "splits": spec.model_dump(include=keys)}


def benchmark_settings(wildcards):
    spec = CFG.tasks[wildcards.task]
    return {
        "source": spec.benchmarks[wildcards.split].model_dump(),
        "on_bad": spec.on_bad,
        "chat": spec.chat,
        "reward": spec.reward,
    }


def pretrain_threads(wildcards):
    """Cores a pre-training job reserves: its role's torch threads (tasks.<task>.<role>)."""
    role, _ = split_lab_model(wildcards.role)
    return getattr(CFG.tasks[wildcards.task], role).threads


def pretrain_settings(wildcards):
    # not the resume-state keys: how often a job saves its state changes no weights; the lab
    # seed only when it is not 0, so lab 0's finished models keep their params and do not rerun
    role, lab = split_lab_model(wildcards.role)
    spec = getattr(CFG.tasks[wildcards.task], role)
    facts = CFG.tasks[wildcards.task].facts
    settings = {
        "seed": CFG.seed,
        "spec": spec.model_dump(exclude=spec.RESUME_ONLY_KEYS),
    }
    return (
        settings
        | ({"lab_seed": lab} if lab else {})
        | ({"facts": facts.model_dump()} if facts else {})
    )


def pretrain_role(wildcards):
    """`teacher-lab2` -> `teacher`: the role rule pretrain_lab trains."""
    return split_lab_model(wildcards.role)[0]


def pretrain_lab_seed(wildcards):
    """`teacher-lab2` -> 2: the lab seed rule pretrain_lab trains it with."""
    return split_lab_model(wildcards.role)[1]


def evaluate_settings(wildcards):
    return {
        "seed": CFG.seed,
        "evaluation": CFG.evaluation.model_dump(),
        "max_new_tokens": CFG.tasks[wildcards.task].max_new_tokens,
    }


def filter_settings(wildcards):
    return {
        "seed": CFG.seed,
        "filter": CFG.filter.model_dump(),
        "sampling": CFG.rl.sampling.model_dump(),
    }


def run_settings(wildcards):
    # Only keys that differ from their defaults: a key added for a new method must not rerun
    # every finished run (changing a default in mintrl/config.py is a code change, not a
    # config change). Nor the run-length keys: extending a run reruns none of its segments.
    run = RUNS[wildcards.run]
    return {
        "seed": run.seed,
        "spec": run.spec_for(wildcards.task).model_dump(
            exclude_defaults=True, exclude=RUN_LENGTH_KEYS
        ),
        "max_new_tokens": CFG.tasks[wildcards.task].max_new_tokens,
    }


# --- RL runs: segments of iterations_per_job iterations, chained through these functions ---
def run_model(task, run, role):
    """The lab model a run starts from (`base`) or asks (`teacher`): its lab seed's."""
    return f"results/models/{task}/{lab_model(role, run_lab_seed(RUNS, run))}"


def run_base(wildcards):
    return run_model(wildcards.task, wildcards.run, "base")


def run_teacher(wildcards):
    return run_model(wildcards.task, wildcards.run, "teacher")


def run_prompts(wildcards):
    """The training prompts the run's own base filtered (rules filter_prompts{,_lab})."""
    suffix = lab_suffix(run_lab_seed(RUNS, wildcards.run))
    return f"results/data/{wildcards.task}/train_filtered{suffix}.parquet"


def kept(run):
    """Evaluated and kept iterations of a run (the main command's stop included)."""
    return kept_iterations(RUNS[run].spec, RUNS[run].stop)


def ends(run):
    """Last iteration of each of the run's segment jobs."""
    return segment_ends(RUNS[run].spec, RUNS[run].stop)


def _is_kept(run, it):
    return int(it) in kept(run)


def checkpoint_dir(task, run, it):
    """Model after iteration `it`: kept (evaluated or final) or a temporary hand-off."""
    if int(it) == 0:
        if run in RUNS and get_method(RUNS[run].spec.method).sft_start:  # RL from its SFT
            return f"results/runs/{task}/{run}/sft/model"
        return run_model(task, run, "base")
    if _is_kept(run, it):
        return f"results/runs/{task}/{run}/iter_{it}/model"
    return f"results/runs/{task}/{run}/iter_{it}/handoff/model"


def optimizer_dir(task, run, it):
    if _is_kept(run, it):
        return f"results/runs/{task}/{run}/iter_{it}/optim"
    return f"results/runs/{task}/{run}/iter_{it}/handoff/optim"


def segment_metrics(task, run, end):
    if _is_kept(run, end):
        return f"results/runs/{task}/{run}/iter_{end}/segment.json"
    return f"results/runs/{task}/{run}/iter_{end}/handoff.json"


def segment_start(wildcards):
    """First iteration of the segment that ends at iteration `it`."""
    all_ends = ends(wildcards.run)
    end = int(wildcards.it)
    if end not in all_ends:
        raise ValueError(
            f"run {wildcards.run}: no segment ends at iteration {end} " f"(ends: {all_ends})"
        )
    i = all_ends.index(end)
    return 1 if i == 0 else all_ends[i - 1] + 1


def segment_init(wildcards):
    return checkpoint_dir(wildcards.task, wildcards.run, segment_start(wildcards) - 1)


def segment_init_optim(wildcards):
    start = segment_start(wildcards)
    return [] if start == 1 else optimizer_dir(wildcards.task, wildcards.run, start - 1)


def segment_teacher(wildcards):
    """The teacher checkpoint, for segments whose method uses it then (RunSpec.teacher_needed)."""
    if RUNS[wildcards.run].spec.teacher_needed(segment_start(wildcards)):
        return run_teacher(wildcards)
    return []


def teacher_flag(wildcards, input):
    return f"--teacher {input.teacher}" if input.teacher else ""


def segment_launcher(wildcards, resources):
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


def tp_flag(wildcards, resources):
    # vLLM tensor parallelism: the job's `tp` resource (GPUs one engine spans; default 1).
    tp = int(getattr(resources, "tp", 1) or 1)
    return f"--tensor-parallel {tp}" if tp > 1 else ""


def init_optim_flag(wildcards, input):
    return f"--init-optim {input.init_optim}" if input.init_optim else ""


def run_tasks(run):
    return RUNS[run].tasks if run in RUNS else TASKS


def run_segment_metrics(wildcards):
    """A tracked run's segment files up to iteration `it` (what a target ran of it)."""
    if wildcards.tracked not in RUNS:
        return []
    return [
        segment_metrics(t, wildcards.tracked, e)
        for t in run_tasks(wildcards.tracked)
        for e in ends(wildcards.tracked)
        if e <= int(wildcards.it)
    ]


def run_sft_metrics(wildcards):
    """SFT+GRPO's SFT stage metrics (its compute), logged with the run."""
    run = RUNS.get(wildcards.tracked)
    if run is None or not get_method(run.spec.method).sft_start:
        return []
    return [f"results/runs/{t}/{wildcards.tracked}/sft/metrics.json" for t in run.tasks]


def run_evaluations(run, upto=None, tasks=None):
    """Evaluation metrics of a run: its lab's base policy (iteration 0) and each kept
    checkpoint up to iteration `upto` (default: all), on `tasks` (default: the run's). A lab's
    base (`base`, `base-lab1`, ...: tracked as a run of its own) has its evaluation only."""
    tasks = run_tasks(run) if tasks is None else tasks
    base_model = lab_model("base", run_lab_seed(RUNS, run))
    base = [f"results/eval/lab/{t}/{base_model}/metrics.json" for t in tasks]
    if run not in RUNS:
        return base
    return base + [
        f"results/eval/{t}/{run}/iter_{it}/metrics.json"
        for t in tasks
        for it in kept(run)
        if upto is None or it <= upto
    ]


def tracked_evaluations(wildcards):
    return run_evaluations(wildcards.tracked, int(wildcards.it))


# --- targets: the main command runs the main table's first pairs; named targets the rest ---
ABLATIONS = sorted({r.group for r in RUNS.values()} - {"main", "tune"})
SCOPES = ["main", "main_table", "sweep", *(f"ablation_{g}" for g in ABLATIONS)]


def scope_runs(scope):
    """Runs of a target: `main` (the main command: the main table's first (lab seed, RL seed)
    pair of each row), `main_table` (all its pairs), `ablation_<group>` (with
    `ablation_reference`'s run), `sweep` (every run)."""
    if scope == "main":
        return [n for n, r in RUNS.items() if r.group == "main" and r.primary]
    if scope == "main_table":
        return [n for n, r in RUNS.items() if r.group == "main"]
    if scope == "sweep":
        return [n for n, r in RUNS.items() if r.group != "tune"]
    group = [n for n, r in RUNS.items() if f"ablation_{r.group}" == scope]
    return ([REFERENCE] if REFERENCE else []) + group


def scope_labs(scope):
    """Lab seeds of a target's runs: its base and teacher rows average over these."""
    return lab_seeds({r: RUNS[r] for r in scope_runs(scope)})


def scope_tasks(scope, run):
    """Tasks of a run a target uses: an ablation's reference only on the ablation's tasks."""
    if scope.startswith("ablation_") and run == REFERENCE:
        used = {t for r in scope_runs(scope) if r != REFERENCE for t in RUNS[r].tasks}
        return [t for t in RUNS[run].tasks if t in used]
    return list(RUNS[run].tasks)


def scope_upto(scope, run):
    """Where a target stops a run: the main command at `main_iterations`, others at the end."""
    return RUNS[run].stop if scope == "main" else RUNS[run].spec.iterations


def scope_evaluations(scope):
    runs = [
        f
        for r in scope_runs(scope)
        for f in run_evaluations(r, scope_upto(scope, r), scope_tasks(scope, r))
    ]
    return sorted(set(runs + lab_evaluations(scope_labs(scope))))


def scope_checkpoints(scope):
    """Evaluated and final checkpoints: products of the pipeline, so deleting one reruns it."""
    return [
        checkpoint_dir(t, r, it)
        for r in scope_runs(scope)
        for t in scope_tasks(scope, r)
        for it in kept(r)
        if it <= scope_upto(scope, r)
    ]


def scope_segment_metrics(scope):
    return [
        segment_metrics(t, r, e)
        for r in scope_runs(scope)
        for t in scope_tasks(scope, r)
        for e in ends(r)
        if e <= scope_upto(scope, r)
    ]


def scope_tracking(scope):
    """MLflow markers of a target: each run logged up to where the target stops it."""
    # an ablation's reference is tracked by the targets it belongs to (all its tasks)
    runs = [
        f"results/tracking/{r}/upto_{scope_upto(scope, r)}.json"
        for r in scope_runs(scope)
        if not (scope.startswith("ablation_") and r == REFERENCE)
    ]
    bases = [f"results/tracking/{lab_model('base', k)}/upto_0.json" for k in scope_labs(scope)]
    return [*bases, *runs]


SUMMARY_FILES = {
    "table": "results/summary/{scope}/table.md",
    "csv": "results/summary/{scope}/table.csv",
    "quality": "results/summary/{scope}/quality.md",
    "stats": "results/summary/{scope}/table_stats.csv",
    "reward": "results/summary/{scope}/reward.png",
    "curves": "results/summary/{scope}/curves.png",
    "knobs": "results/summary/{scope}/knobs.png",
    "pass1": "results/summary/{scope}/pass1.png",
}


def summary_files(scope):
    return [f.format(scope=scope) for f in SUMMARY_FILES.values()]


def summary_evaluations(wildcards):
    return scope_evaluations(wildcards.scope)


def summary_segments(wildcards):
    return scope_segment_metrics(wildcards.scope)


def summary_order(wildcards):
    return ["base", *scope_runs(wildcards.scope), "teacher"]


def summary_artifacts(wildcards):
    return summary_files(wildcards.scope)


def target(scope):
    """Everything a target produces: the evaluations of its lab seeds' base and teacher, its
    runs' kept checkpoints, its summary, and MLflow (its runs, each lab's base evaluation, and
    a run holding its summary)."""
    return [
        *lab_evaluations(scope_labs(scope)),
        *scope_checkpoints(scope),
        *summary_files(scope),
        *scope_tracking(scope),
        f"results/tracking/summary-{scope}.json",
    ]


# --- tuning (`snakemake tune`): short runs per grid point, scored on the validation split ---
TUNE_RUNS = [n for n, r in RUNS.items() if r.group == "tune"]


def tune_checkpoint(wildcards):
    return checkpoint_dir(wildcards.task, wildcards.run, RUNS[wildcards.run].spec.iterations)


def tune_evaluations():
    return [f"results/tune/{t}/{r}/metrics.json" for r in TUNE_RUNS for t in RUNS[r].tasks]
