rule prepare:
    output:
        expand("results/data/{{task}}/{split}.parquet", split=SPLITS),
    conda:
        "../envs/mintrl.yaml"
    log:
        "results/logs/prepare/{task}.log",
    benchmark:
        "results/benchmarks/rules/prepare/{task}.tsv"
    params:
        config=CONFIG_FILE,
        settings=prepare_settings,
        out=subpath(output[0], parent=True),
    shell:
        "python -m mintrl.prepare --config {params.config} --task {wildcards.task} "
        "--out {params.out} > {log} 2>&1"
