"""MInTRL: Minimal Intervention Reinforcement Learning.

Subpackages and modules, one responsibility each (stages are ``python -m mintrl.<stage>``):

  methods         the method table: each method's rollout mode and objective per phase
  algo/           objectives (pure losses and the Objective interface), advantages,
                  anchors, train_targets (advantages and values from a rollout table)
  intervention/   Algorithm 2.1: semi_on_policy rollouts, judges, interveners,
                  chat_policies (the paper setting's prompted LLM), policies (which a run uses)
  rollouts        prompt choice, on-policy sampling, rollout modes, the rollout row
  engine/         generation engines (transformers, vLLM, mixed-policy) and decoding helpers
  training/       rl_loop (a segment's iterations, checkpoints, resume), trainer (DeepSpeed,
                  one optimisation round), batching, logprobs, distributed, pretraining, sft,
                  one_iteration
  config/         the config model, run resolution, loading, the JSON schema, tuning
  splits, fetching, filtering   task splits, pinned downloads, the training-prompt filter
  pipeline        what each Snakemake rule reads and each target needs (job_settings: params)
  tasks/          the toy tasks (generator, reward, step oracle) and their registry
  datasets/       readers of the paper setting's datasets
  rewards/        verifiable rewards of the paper setting (math, code)
  sandbox/        running model-generated code in a separate, limited process that sees
                  only its interpreter (runner, view, boot)
  report/         evaluation, tables, stats (intervals), passk, plots, inspector,
                  run_metrics, tracking (the only mlflow import)
  tokenizer, models, steps, prompting   the toy's tokenizer and models, steps, prompts
  schemas, io, registry, progress       one schema per table, atomic writes, registries, bars
  cli             the stages' shared command-line wrapper: user errors as one line, exit 2
  cpu_numerics    one CPU kernel family on every x86 processor (set here, before torch loads)
  blas_products   the toy models' matrix products on OpenBLAS's named kernel when pinned
  config_reference  docs/config.md, generated from the config model
Stages (only their CLI): prepare, pretrain, fetch, filter, evaluate, sft, segment, train,
rollout, summarize, track, tune.
"""

from mintrl.cpu_numerics import pin_cpu_numerics
from mintrl.progress import quiet_library_bars

# Before any module imports torch or numpy: each dispatcher reads its variable once (cpu_numerics).
pin_cpu_numerics()
# Before transformers loads: it reads the switch for its own bars once.
quiet_library_bars()

__version__ = "0.1.0"
