# Lab seed 0's base and teacher (results/models/<task>/{base,teacher}). The job reserves the
# role's threads; the stage runs that many whatever --cores grants (its weights depend on it).
rule pretrain:
    input:
        PIPELINE.pretrain_inputs,
    output:
        model=directory("results/models/{task}/{role}"),
        report="results/models/{task}/{role}.json",
    log:
        "results/logs/pretrain/{task}_{role}.log",
    benchmark:
        "results/benchmarks/rules/pretrain/{task}_{role}.tsv"
    wildcard_constraints:
        task=one_of(PIPELINE.toy_tasks),
        role=one_of(ROLES),
    # The lab first: every later job waits on a model, and a pre-training left for last
    # runs alone on one core while the other idles.
    priority: 10
    conda:
        "../envs/mintrl.yaml"
    threads: PIPELINE.pretrain_threads
    params:
        config=CONFIG_FILE,
        kernels=CPU_KERNELS,
        settings=PIPELINE.pretrain_settings,
        data=subpath(input[0], parent=True),
    shell:
        "python -m mintrl.pretrain --config {params.config} --task {wildcards.task} "
        "--role {wildcards.role} --exclude {params.data} --out {output.model} > {log} 2>&1"


# The base and teacher of a lab seed k > 0 (`base-lab1`, `teacher-lab2`, ...: runs.<i>.lab_seeds),
# pre-trained with seeds offset by k. A rule of its own: Snakemake reruns a job whose command or
# params changed, so rule pretrain keeps both as they were and lab 0's models do not rerun.
rule pretrain_lab:
    input:
        PIPELINE.pretrain_inputs,
    output:
        model=directory("results/models/{task}/{role}"),
        report="results/models/{task}/{role}.json",
    log:
        "results/logs/pretrain/{task}_{role}.log",
    benchmark:
        "results/benchmarks/rules/pretrain/{task}_{role}.tsv"
    wildcard_constraints:
        task=one_of(PIPELINE.toy_tasks),
        role=one_of(PIPELINE.later_lab_models),
    # The lab first: every later job waits on a model, and a pre-training left for last
    # runs alone on one core while the other idles.
    priority: 10
    conda:
        "../envs/mintrl.yaml"
    threads: PIPELINE.pretrain_threads
    params:
        config=CONFIG_FILE,
        kernels=CPU_KERNELS,
        settings=PIPELINE.pretrain_settings,
        data=subpath(input[0], parent=True),
        role=PIPELINE.pretrain_role,
        lab_seed=PIPELINE.pretrain_lab_seed,
    shell:
        "python -m mintrl.pretrain --config {params.config} --task {wildcards.task} "
        "--role {params.role} --lab-seed {params.lab_seed} --exclude {params.data} "
        "--out {output.model} > {log} 2>&1"
