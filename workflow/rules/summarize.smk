rule summarize:
    input:
        evals=all_evaluations(),
        segments=all_segment_metrics(),
    output:
        **SUMMARY,
    conda:
        "../envs/mintrl.yaml"
    log:
        "results/logs/summarize.log",
    benchmark:
        "results/benchmarks/rules/summarize.tsv"
    params:
        order=["base", *RUNS, "teacher"],
        out=subpath(output.table, parent=True),
    shell:
        "python -m mintrl.summarize --evals {input.evals} --segments {input.segments} "
        "--order {params.order} --out {params.out} > {log} 2>&1"
