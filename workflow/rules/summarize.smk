# A target's results table and plots (rows runs, columns benchmarks + average).
rule summarize:
    input:
        evals=PIPELINE.summary_evaluations,
        segments=PIPELINE.summary_segments,
    output:
        table=report(SUMMARY_FILES["table"], caption="../report/table.rst", category="{scope}"),
        csv=SUMMARY_FILES["csv"],
        quality=report(
            SUMMARY_FILES["quality"], caption="../report/quality.rst", category="{scope}"
        ),
        stats=SUMMARY_FILES["stats"],
        reward=report(SUMMARY_FILES["reward"], caption="../report/reward.rst", category="{scope}"),
        pass1=report(SUMMARY_FILES["pass1"], caption="../report/pass1.rst", category="{scope}"),
        curves=report(SUMMARY_FILES["curves"], caption="../report/curves.rst", category="{scope}"),
        knobs=report(SUMMARY_FILES["knobs"], caption="../report/knobs.rst", category="{scope}"),
    log:
        "results/logs/summarize/{scope}.log",
    benchmark:
        "results/benchmarks/rules/summarize/{scope}.tsv"
    conda:
        "../envs/mintrl.yaml"
    params:
        config=CONFIG_FILE,
        order=PIPELINE.summary_order,
        out=subpath(output.table, parent=True),
    shell:
        "python -m mintrl.summarize --config {params.config} --evals {input.evals} "
        "--segments {input.segments} --order {params.order} --out {params.out} > {log} 2>&1"
