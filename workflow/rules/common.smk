# The config, validated twice, and the names the rules use. What a rule reads and its params
# come from mintrl.pipeline (PIPELINE.<method>, tested in tests/test_pipeline.py): no logic lives here.
import os

from snakemake.utils import validate

from mintrl.config import parse_config, write_resolved_config
from mintrl.cpu_numerics import kernels
from mintrl.pipeline import (
    FACT_TOY_SPLITS,
    KNOBS_FILE,
    LENGTH_TOY_SPLITS,
    SUMMARY_FILES,
    Pipeline,
    one_of,
)
from mintrl.config.runs import ROLES

# One source of truth, two entry points: the pydantic model (its messages name the dotted key,
# it resolves every run, and it reads --config strings such as "41" as numbers) and the JSON
# schema generated from it (python -m mintrl.config --schema ...; a test keeps the committed
# file current), which Snakemake checks on the resolved config.
CFG = parse_config(config, "from " + " + ".join(map(str, workflow.configfiles)) + " + --config")
# set_default=False: the model filled every default; the validator would add the defaults of
# every branch of a union (a toy task's into a dataset task).
validate(CFG.model_dump(mode="json"), "../schemas/config.schema.json", set_default=False)
# Stages read exactly what Snakemake resolved (config files merged, --config overrides applied).
# Written when jobs are about to run, so a dry run (-n) changes nothing that stages read.
CONFIG_FILE = "results/config/resolved.yaml"


onstart:
    write_resolved_config(CFG, CONFIG_FILE)


# The paper's claims beside the workflow (config/claims.yaml), wherever the working directory is.
CLAIMS_FILE = os.path.join(workflow.basedir, "..", "config", "claims.yaml")
PIPELINE = Pipeline(CFG, CLAIMS_FILE)
# The CPU kernels every job runs (importing mintrl pinned them, mintrl.cpu_numerics): a param of
# each job that computes with torch, so outputs made with other kernels are made again.
CPU_KERNELS = kernels()
