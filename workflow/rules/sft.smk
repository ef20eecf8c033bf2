# SFT+GRPO's supervised stage: the teacher's correct trajectories on the training prompts, then
# next-token training of the base; its model is the run's iteration-0 policy (PIPELINE.checkpoint_dir).
# Base, teacher and prompts are those of the run's lab seed.
rule sft:
    input:
        init=PIPELINE.run_base,
        teacher=PIPELINE.run_teacher,
        prompts=PIPELINE.run_prompts,
    output:
        model=directory("results/runs/{task}/{run}/sft/model"),
        samples="results/runs/{task}/{run}/sft/samples.parquet",
        metrics="results/runs/{task}/{run}/sft/metrics.json",
    log:
        "results/logs/sft/{task}_{run}.log",
    benchmark:
        "results/benchmarks/rules/sft/{task}_{run}.tsv"
    conda:
        "../envs/mintrl.yaml"
    threads: 1
    params:
        config=CONFIG_FILE,
        kernels=CPU_KERNELS,
        settings=PIPELINE.run_settings,
        out=subpath(output.metrics, parent=True),
    shell:
        "python -m mintrl.sft --config {params.config} --run {wildcards.run} "
        "--task {wildcards.task} --teacher {input.teacher} --init {input.init} "
        "--prompts {input.prompts} --out {params.out} --threads {threads} > {log} 2>&1"
