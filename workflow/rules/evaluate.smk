rule evaluate_lab:
    input:
        model="results/models/{task}/{role}",
        prompts=eval_split_files,
    output:
        metrics="results/eval/lab/{task}/{role}/metrics.json",
        samples="results/eval/lab/{task}/{role}/samples.parquet",
    log:
        "results/logs/evaluate/lab_{task}_{role}.log",
    benchmark:
        "results/benchmarks/rules/evaluate/lab_{task}_{role}.tsv"
    params:
        config=CONFIG_FILE,
        settings=evaluate_settings,
        out=subpath(output.metrics, parent=True),
    threads: 1
    shell:
        "python -m mintrl.evaluate --config {params.config} --checkpoint {input.model} "
        "--prompts {input.prompts} --out {params.out} --threads {threads} > {log} 2>&1"
