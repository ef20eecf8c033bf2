rule evaluate_lab:
    input:
        model="results/models/{task}/{role}",
        prompts=PIPELINE.eval_split_files,
    output:
        metrics="results/eval/lab/{task}/{role}/metrics.json",
        samples="results/eval/lab/{task}/{role}/samples.parquet",
    log:
        "results/logs/evaluate/lab_{task}_{role}.log",
    benchmark:
        "results/benchmarks/rules/evaluate/lab_{task}_{role}.tsv"
    conda:
        "../envs/mintrl.yaml"
    threads: 1
    params:
        config=CONFIG_FILE,
        kernels=CPU_KERNELS,
        settings=PIPELINE.evaluate_settings,
        out=subpath(output.metrics, parent=True),
        tp=PIPELINE.tp_flag,
    shell:
        "python -m mintrl.evaluate --config {params.config} --checkpoint {input.model} "
        "--prompts {input.prompts} --task {wildcards.task} --out {params.out} "
        "--run {wildcards.role} --iteration 0 {params.tp} "
        "--threads {threads} > {log} 2>&1"


rule evaluate_run:
    input:
        model="results/runs/{task}/{run}/iter_{it}/model",
        prompts=PIPELINE.eval_split_files,
    output:
        metrics="results/eval/{task}/{run}/iter_{it}/metrics.json",
        samples="results/eval/{task}/{run}/iter_{it}/samples.parquet",
    log:
        "results/logs/evaluate/{task}_{run}_{it}.log",
    benchmark:
        "results/benchmarks/rules/evaluate/{task}_{run}_{it}.tsv"
    conda:
        "../envs/mintrl.yaml"
    threads: 1
    params:
        config=CONFIG_FILE,
        kernels=CPU_KERNELS,
        settings=PIPELINE.evaluate_settings,
        out=subpath(output.metrics, parent=True),
        tp=PIPELINE.tp_flag,
    shell:
        "python -m mintrl.evaluate --config {params.config} --checkpoint {input.model} "
        "--prompts {input.prompts} --task {wildcards.task} --out {params.out} "
        "--run {wildcards.run} "
        "--iteration {wildcards.it} {params.tp} --threads {threads} > {log} 2>&1"
