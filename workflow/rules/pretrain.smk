rule pretrain:
    input:
        split_files,
    output:
        model=directory("results/models/{task}/{role}"),
        report="results/models/{task}/{role}.json",
    log:
        "results/logs/pretrain/{task}_{role}.log",
    benchmark:
        "results/benchmarks/rules/pretrain/{task}_{role}.tsv"
    wildcard_constraints:
        task=one_of(TOY_TASKS),
    conda:
        "../envs/mintrl.yaml"
    threads: 2
    params:
        config=CONFIG_FILE,
        settings=pretrain_settings,
        data=subpath(input[0], parent=True),
    shell:
        "python -m mintrl.pretrain --config {params.config} --task {wildcards.task} "
        "--role {wildcards.role} --exclude {params.data} --out {output.model} "
        "--threads {threads} > {log} 2>&1"
