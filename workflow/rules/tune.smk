# `snakemake tune`: each main-table row once per point of its grid (tune.grids), a short run
# scored on the validation split; the chooser writes results/tune/chosen.{yaml,md}, and
# `python -m mintrl.tune --apply results/tune/chosen.yaml --to config/config.yaml` writes the
# chosen values into the config (with the grid and the date), so the main command never tunes.
rule evaluate_validation:
    input:
        model=PIPELINE.tune_checkpoint,
        prompts="results/data/{task}/validation.parquet",
    output:
        metrics="results/tune/{task}/{run}/metrics.json",
        samples="results/tune/{task}/{run}/samples.parquet",
    log:
        "results/logs/tune/{task}_{run}.log",
    benchmark:
        "results/benchmarks/rules/tune/{task}_{run}.tsv"
    conda:
        "../envs/mintrl.yaml"
    threads: 1
    params:
        config=CONFIG_FILE,
        kernels=CPU_KERNELS,
        settings=PIPELINE.evaluate_settings,
        samples=CFG.tune.samples,
        iteration=PIPELINE.run_iterations,
        out=subpath(output.metrics, parent=True),
    shell:
        "python -m mintrl.evaluate --config {params.config} --checkpoint {input.model} "
        "--prompts {input.prompts} --samples {params.samples} --out {params.out} "
        "--run {wildcards.run} --iteration {params.iteration} --threads {threads} > {log} 2>&1"


rule evaluate_validation_lab:
    input:
        model="results/models/{task}/{role}",
        prompts="results/data/{task}/validation.parquet",
    output:
        metrics="results/tune/{task}/lab/{role}/metrics.json",
        samples="results/tune/{task}/lab/{role}/samples.parquet",
    log:
        "results/logs/tune/{task}_lab_{role}.log",
    benchmark:
        "results/benchmarks/rules/tune/{task}_lab_{role}.tsv"
    conda:
        "../envs/mintrl.yaml"
    threads: 1
    params:
        config=CONFIG_FILE,
        kernels=CPU_KERNELS,
        settings=PIPELINE.evaluate_settings,
        samples=CFG.tune.samples,
        out=subpath(output.metrics, parent=True),
    shell:
        "python -m mintrl.evaluate --config {params.config} --checkpoint {input.model} "
        "--prompts {input.prompts} --samples {params.samples} --out {params.out} "
        "--task {wildcards.task} --threads {threads} > {log} 2>&1"


rule tune_choose:
    input:
        evals=PIPELINE.tune_evaluations(),
        base=PIPELINE.tune_base_evaluations(),
        prompts=PIPELINE.tune_prompts(),
    output:
        chosen="results/tune/chosen.yaml",
        table="results/tune/chosen.md",
    log:
        "results/logs/tune/choose.log",
    conda:
        "../envs/mintrl.yaml"
    params:
        config=CONFIG_FILE,
        out=subpath(output.chosen, parent=True),
    shell:
        "python -m mintrl.tune --config {params.config} --evals {input.evals} "
        "--base {input.base} --prompts {input.prompts} --out {params.out} > {log} 2>&1"
