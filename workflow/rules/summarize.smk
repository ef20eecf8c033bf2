# A target's results table and plots (rows runs, columns benchmarks + average).
rule summarize:
    input:
        evals=summary_evaluations,
        segments=summary_segments,
    output:
        **SUMMARY_FILES,
    conda:
        "../envs/mintrl.yaml"
    log:
        "results/logs/summarize/{scope}.log",
    benchmark:
        "results/benchmarks/rules/summarize/{scope}.tsv"
    params:
        config=CONFIG_FILE,
        order=summary_order,
        out=subpath(output.table, parent=True),
    shell:
        "python -m mintrl.summarize --config {params.config} --evals {input.evals} "
        "--segments {input.segments} --order {params.order} --out {params.out} > {log} 2>&1"
