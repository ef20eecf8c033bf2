# Helpers for the rules: config validation, wildcard constraints, input functions.
from mintrl.config import parse_config

# One validator: the pydantic model in mintrl/config.py. A bad key fails here, before any job.
CFG = parse_config(config, ", ".join(map(str, workflow.configfiles)))
# Stages read the same file Snakemake loaded.
CONFIG_FILE = workflow.configfiles[-1]
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
