# A toy task's splits, drawn from its generator: with a fact table (the default) ...
rule prepare:
    output:
        expand("results/data/{{task}}/{split}.parquet", split=FACT_TOY_SPLITS),
    log:
        "results/logs/prepare/{task}.log",
    benchmark:
        "results/benchmarks/rules/prepare/{task}.tsv"
    wildcard_constraints:
        task=one_of(PIPELINE.fact_toys),
    conda:
        "../envs/mintrl.yaml"
    params:
        config=CONFIG_FILE,
        settings=PIPELINE.prepare_settings,
        out=subpath(output[0], parent=True),
    shell:
        "python -m mintrl.prepare --config {params.config} --task {wildcards.task} "
        "--out {params.out} > {log} 2>&1"


# ... and the length toy's (config/length_toy.yaml), which has no medium split.
rule prepare_length_toy:
    output:
        expand("results/data/{{task}}/{split}.parquet", split=LENGTH_TOY_SPLITS),
    log:
        "results/logs/prepare/{task}.log",
    benchmark:
        "results/benchmarks/rules/prepare/{task}.tsv"
    wildcard_constraints:
        task=one_of(PIPELINE.length_toys),
    conda:
        "../envs/mintrl.yaml"
    params:
        config=CONFIG_FILE,
        settings=PIPELINE.prepare_settings,
        out=subpath(output[0], parent=True),
    shell:
        "python -m mintrl.prepare --config {params.config} --task {wildcards.task} "
        "--out {params.out} > {log} 2>&1"


# A dataset task's training prompts and the validation split held out of them.
rule prepare_train:
    input:
        source=PIPELINE.train_source,
    output:
        train="results/data/{task}/train.parquet",
        validation="results/data/{task}/validation.parquet",
        report="results/data/{task}/train.report.json",
    log:
        "results/logs/prepare/{task}_train.log",
    benchmark:
        "results/benchmarks/rules/prepare/{task}_train.tsv"
    wildcard_constraints:
        task=one_of(PIPELINE.dataset_tasks),
    conda:
        "../envs/mintrl.yaml"
    params:
        config=CONFIG_FILE,
        settings=PIPELINE.prepare_settings,
        out=subpath(output.train, parent=True),
    shell:
        "python -m mintrl.prepare --config {params.config} --task {wildcards.task} "
        "--source {input.source} --out {params.out} > {log} 2>&1"


# One benchmark of a dataset task (an evaluation split).
rule prepare_benchmark:
    input:
        source=PIPELINE.benchmark_source,
    output:
        split="results/data/{task}/{split}.parquet",
        report="results/data/{task}/{split}.report.json",
    log:
        "results/logs/prepare/{task}_{split}.log",
    benchmark:
        "results/benchmarks/rules/prepare/{task}_{split}.tsv"
    wildcard_constraints:
        task=one_of(PIPELINE.dataset_tasks),
        split=one_of(PIPELINE.benchmarks),
    conda:
        "../envs/mintrl.yaml"
    params:
        config=CONFIG_FILE,
        settings=PIPELINE.benchmark_settings,
        out=subpath(output.split, parent=True),
    shell:
        "python -m mintrl.prepare --config {params.config} --task {wildcards.task} "
        "--split {wildcards.split} --source {input.source} --out {params.out} > {log} 2>&1"
