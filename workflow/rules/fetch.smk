# What a dataset task needs from outside: files and models, pinned (mintrl/fetching.py). Hub
# downloads land in the Hugging Face cache once; results/ holds links to them.
rule fetch_data:
    output:
        data=directory("results/raw/{task}/{source}"),
        report="results/raw/{task}/{source}.json",
    log:
        "results/logs/fetch/{task}_{source}.log",
    wildcard_constraints:
        task=one_of(PIPELINE.dataset_tasks),
    conda:
        "../envs/mintrl.yaml"
    resources:
        downloads=1,
    params:
        flags=PIPELINE.fetch_data_flags,
    shell:
        "python -m mintrl.fetch data {params.flags} --out {output.data} > {log} 2>&1"


rule fetch_model:
    output:
        model=directory("results/models/{task}/{role}"),
        report="results/models/{task}/{role}.json",
    log:
        "results/logs/fetch/{task}_{role}.log",
    wildcard_constraints:
        task=one_of(PIPELINE.dataset_tasks),
        role=one_of(ROLES),  # fetched: lab seed 0 only
    conda:
        "../envs/mintrl.yaml"
    resources:
        downloads=1,
    params:
        flags=PIPELINE.fetch_model_flags,
        settings=PIPELINE.fetch_model_settings,
    shell:
        "python -m mintrl.fetch model {params.flags} --out {output.model} > {log} 2>&1"
