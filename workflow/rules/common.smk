# Helpers for the rules: config validation, wildcard constraints, input functions.
from mintrl.config import parse_config, write_resolved_config

# One validator: the pydantic model in mintrl/config.py. A bad key fails here, before any job.
CFG = parse_config(config, "from " + " + ".join(map(str, workflow.configfiles)) + " + --config")
# Stages read exactly what Snakemake resolved (config files merged, --config overrides applied).
CONFIG_FILE = write_resolved_config(CFG, "results/config/resolved.yaml")
TASKS = sorted(CFG.tasks)
ROLES = ["base", "teacher"]
SPLITS = ["train", "validation", "easy", "hard"]


wildcard_constraints:
    task="|".join(TASKS),
    role="|".join(ROLES),


def split_files(wildcards):
    return expand("results/data/{task}/{split}.parquet", task=wildcards.task, split=SPLITS)


def eval_split_files(wildcards):
    return expand("results/data/{task}/{split}.parquet", task=wildcards.task, split=["easy", "hard"])


def lab_evaluations():
    return expand("results/eval/lab/{task}/{role}/metrics.json", task=TASKS, role=ROLES)


# The config each rule depends on, as a `settings` param: Snakemake reruns a job when its
# params change, so editing one task's teacher reruns that teacher and what follows, only.
def prepare_settings(wildcards):
    spec = CFG.tasks[wildcards.task]
    return {"seed": CFG.seed, "splits": spec.model_dump(include={"easy", "hard", "train", "sizes"})}


def pretrain_settings(wildcards):
    return {"seed": CFG.seed, "spec": getattr(CFG.tasks[wildcards.task], wildcards.role).model_dump()}


def evaluate_settings(wildcards):
    return {
        "seed": CFG.seed,
        "evaluation": CFG.evaluation.model_dump(),
        "max_new_tokens": CFG.tasks[wildcards.task].max_new_tokens,
    }
