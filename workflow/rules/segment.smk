# A segment: iterations segment_start..it of one run, rollout then train, in one process.
# Ends at kept iterations (evaluated or final) keep model and optimizer state; other ends
# hand off temporary ones to the next segment (rule segment_handoff).
rule segment:
    input:
        init=PIPELINE.segment_init,
        init_optim=PIPELINE.segment_init_optim,
        teacher=PIPELINE.segment_teacher,
        prompts=PIPELINE.run_prompts,  # filtered by the base of the run's lab seed
    output:
        model=directory("results/runs/{task}/{run}/iter_{it}/model"),
        optim=directory("results/runs/{task}/{run}/iter_{it}/optim"),
        metrics="results/runs/{task}/{run}/iter_{it}/segment.json",
    log:
        "results/logs/segment/{task}_{run}_{it}.log",
    benchmark:
        "results/benchmarks/rules/segment/{task}_{run}_{it}.tsv"
    conda:
        "../envs/mintrl.yaml"
    threads: 1
    params:
        config=CONFIG_FILE,
        kernels=CPU_KERNELS,
        settings=PIPELINE.run_settings,
        start=PIPELINE.segment_start,
        init_optim=PIPELINE.init_optim_flag,
        teacher=PIPELINE.teacher_flag,
        root=subpath(output.metrics, ancestor=2),
        launcher=PIPELINE.segment_launcher,
        tp=PIPELINE.tp_flag,
    shell:
        "{params.launcher} --config {params.config} --run {wildcards.run} "
        "--task {wildcards.task} --start {params.start} --end {wildcards.it} "
        "--init {input.init} {params.init_optim} {params.teacher} --prompts {input.prompts} "
        "--root {params.root} --out-model {output.model} --out-optim {output.optim} "
        "--out-metrics {output.metrics} {params.tp} --threads {threads} > {log} 2>&1"


use rule segment as segment_handoff with:
    output:
        model=temp(directory("results/runs/{task}/{run}/iter_{it}/handoff/model")),
        optim=temp(directory("results/runs/{task}/{run}/iter_{it}/handoff/optim")),
        metrics="results/runs/{task}/{run}/iter_{it}/handoff.json",
