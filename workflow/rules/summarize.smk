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
    log:
        "results/logs/summarize/{scope}.log",
    benchmark:
        "results/benchmarks/rules/summarize/{scope}.tsv"
    wildcard_constraints:
        scope=one_of(PIPELINE.plain_scopes),
    conda:
        "../envs/mintrl.yaml"
    params:
        config=CONFIG_FILE,
        order=PIPELINE.summary_order,
        out=subpath(output.table, parent=True),
        knobs="",
    shell:
        "python -m mintrl.summarize --config {params.config} --evals {input.evals} "
        "--segments {input.segments} --order {params.order} --out {params.out} {params.knobs} "
        "> {log} 2>&1"


# The same, for a target where a numeric setting varies alone: plus Pass@1 against it.
use rule summarize as summarize_knobs with:
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
        knobs=report(KNOBS_FILE, caption="../report/knobs.rst", category="{scope}"),
    wildcard_constraints:
        scope=one_of(PIPELINE.knob_scopes),
    params:
        config=CONFIG_FILE,
        order=PIPELINE.summary_order,
        out=subpath(output.table, parent=True),
        knobs="--knobs",


# The paper's claims (config/claims.yaml, fixed before the sweep), decided from every run of
# the sweep at its last evaluation.
rule claims_verdicts:
    input:
        evals=PIPELINE.scope_evaluations("sweep"),
        claims=CLAIMS_FILE,
    output:
        md=report(
            "results/summary/claims/verdicts.md", caption="../report/claims.rst", category="claims"
        ),
        csv="results/summary/claims/verdicts.csv",
        comparisons="results/summary/claims/comparisons.csv",
        png=report(
            "results/summary/claims/verdicts.png",
            caption="../report/claims.rst",
            category="claims",
        ),
    log:
        "results/logs/summarize/claims.log",
    benchmark:
        "results/benchmarks/rules/summarize/claims.tsv"
    conda:
        "../envs/mintrl.yaml"
    params:
        config=CONFIG_FILE,
        out=subpath(output.md, parent=True),
    shell:
        "python -m mintrl.claims --config {params.config} --claims {input.claims} "
        "--evals {input.evals} --out {params.out} > {log} 2>&1"


# The same claims after `snakemake claims` ran the reproduced ones' rows over every pair.
use rule claims_verdicts as claims_verdicts_pairs with:
    input:
        evals=PIPELINE.claims_pairs_evaluations,
        claims=CLAIMS_FILE,
    output:
        md=report(
            "results/summary/claims_pairs/verdicts.md",
            caption="../report/claims.rst",
            category="claims",
        ),
        csv="results/summary/claims_pairs/verdicts.csv",
        comparisons="results/summary/claims_pairs/comparisons.csv",
        png=report(
            "results/summary/claims_pairs/verdicts.png",
            caption="../report/claims.rst",
            category="claims",
        ),
    log:
        "results/logs/summarize/claims_pairs.log",
    benchmark:
        "results/benchmarks/rules/summarize/claims_pairs.tsv"
    params:
        config=CONFIG_FILE,
        out=subpath(output.md, parent=True),
