# Helpers for the rules: config validation, wildcard constraints, input functions.
from mintrl.config import parse_config, write_resolved_config

# One validator: the pydantic model in mintrl/config.py. A bad key fails here, before any job.
CFG = parse_config(config, "from " + " + ".join(map(str, workflow.configfiles)) + " + --config")
# Stages read exactly what Snakemake resolved (config files merged, --config overrides applied),
# from a content-addressed file that is never rewritten.
CONFIG_FILE = write_resolved_config(CFG, "results/config")
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
