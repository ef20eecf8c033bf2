rule filter_prompts:
    input:
        model="results/models/{task}/base",
        prompts="results/data/{task}/train.parquet",
    output:
        prompts="results/data/{task}/train_filtered.parquet",
        rates="results/filter/{task}/pass_rates.parquet",
    log:
        "results/logs/filter/{task}.log",
    benchmark:
        "results/benchmarks/rules/filter/{task}.tsv"
    conda:
        "../envs/mintrl.yaml"
    threads: 1
    params:
        config=CONFIG_FILE,
        settings=filter_settings,
        tp=tp_flag,
    shell:
        "python -m mintrl.filter --config {params.config} --checkpoint {input.model} "
        "--prompts {input.prompts} --task {wildcards.task} --out {output.prompts} "
        "--rates {output.rates} {params.tp} "
        "--threads {threads} > {log} 2>&1"
