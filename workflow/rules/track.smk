# MLflow: one run per pipeline run, plus `base`. Logging is idempotent and takes a file lock.
rule track:
    input:
        segments=run_segment_metrics,
        sft=run_sft_metrics,
        evals=tracked_evaluations,
        artifacts=list(SUMMARY.values()),
    output:
        "results/tracking/{tracked}.json",
    conda:
        "../envs/mintrl.yaml"
    log:
        "results/logs/track/{tracked}.log",
    benchmark:
        "results/benchmarks/rules/track/{tracked}.tsv"
    params:
        config=CONFIG_FILE,
    shell:
        "python -m mintrl.track --config {params.config} --run {wildcards.tracked} "
        "--segments {input.segments} --sft {input.sft} --evals {input.evals} --artifacts {input.artifacts} "
        "--out {output} > {log} 2>&1"
