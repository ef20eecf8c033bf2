# MLflow: one run per pipeline run (logged up to the iteration a target stops it at), plus
# each lab seed's base and teacher (`base`, `teacher-lab1`, ...), plus one per target holding
# its summary. Logging is idempotent and takes a file lock.
rule track:
    input:
        segments=PIPELINE.run_segment_metrics,
        sft=PIPELINE.run_sft_metrics,
        evals=PIPELINE.tracked_evaluations,
    output:
        "results/tracking/{tracked}/upto_{it}.json",
    log:
        "results/logs/track/{tracked}_{it}.log",
    benchmark:
        "results/benchmarks/rules/track/{tracked}_{it}.tsv"
    conda:
        "../envs/mintrl.yaml"
    params:
        config=CONFIG_FILE,
    shell:
        "python -m mintrl.track --config {params.config} --run {wildcards.tracked} "
        "--segments {input.segments} --sft {input.sft} --evals {input.evals} "
        "--out {output} > {log} 2>&1"


rule track_summary:
    input:
        artifacts=PIPELINE.summary_artifacts,
    output:
        "results/tracking/summary-{scope}.json",
    log:
        "results/logs/track/summary-{scope}.log",
    benchmark:
        "results/benchmarks/rules/track/summary-{scope}.tsv"
    conda:
        "../envs/mintrl.yaml"
    params:
        config=CONFIG_FILE,
    shell:
        "python -m mintrl.track --config {params.config} --run summary-{wildcards.scope} "
        "--artifacts {input.artifacts} --out {output} > {log} 2>&1"


# The claims' verdicts in MLflow beside the tables (run summary-claims).
rule track_claims:
    input:
        artifacts=[
            "results/summary/claims/verdicts.md",
            "results/summary/claims/verdicts.csv",
            "results/summary/claims/comparisons.csv",
            "results/summary/claims/verdicts.png",
        ],
    output:
        "results/tracking/summary-claims.json",
    log:
        "results/logs/track/summary-claims.log",
    benchmark:
        "results/benchmarks/rules/track/summary-claims.tsv"
    conda:
        "../envs/mintrl.yaml"
    params:
        config=CONFIG_FILE,
    shell:
        "python -m mintrl.track --config {params.config} --run summary-claims "
        "--artifacts {input.artifacts} --out {output} > {log} 2>&1"
