# RL's training prompts, filtered by the base's pass rates (FilterSpec).
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
        kernels=CPU_KERNELS,
        settings=PIPELINE.filter_settings,
        tp=PIPELINE.tp_flag,
    shell:
        "python -m mintrl.filter --config {params.config} --checkpoint {input.model} "
        "--prompts {input.prompts} --task {wildcards.task} --out {output.prompts} "
        "--rates {output.rates} {params.tp} "
        "--threads {threads} > {log} 2>&1"


# The same for the base of a lab seed k > 0: the prompts its runs train on.
use rule filter_prompts as filter_prompts_lab with:
    input:
        model="results/models/{task}/base-lab{lab}",
        prompts="results/data/{task}/train.parquet",
    output:
        prompts="results/data/{task}/train_filtered-lab{lab}.parquet",
        rates="results/filter/{task}/pass_rates-lab{lab}.parquet",
    log:
        "results/logs/filter/{task}-lab{lab}.log",
    benchmark:
        "results/benchmarks/rules/filter/{task}-lab{lab}.tsv"
