"""MInTRL: Minimal Intervention Reinforcement Learning.

Modules, one responsibility each (stages are ``python -m mintrl.<stage>``: argparse around
one library call):

What a method is
  methods         the method table: each method's rollout mode and objective per phase
  objectives      losses, pure tensor functions, and the one interface the trainer calls
  advantages      advantage estimators, pure functions of rewards (GRPO, MENTOR, V̂)
  anchors         the advantage regression's anchors (Proxy, Const, Intervener)
  train_targets   per-rollout advantages and values from an iteration's rollout table
Rollouts and intervention
  rollout         on-policy sampling, prompt choice, the rollout row (stage ``rollout``)
  semi_on_policy  Algorithm 2.1: review chunk by chunk, cut, correct, hand back
  judges          find the earliest wrong step (oracle, likelihood)
  interveners     write the correction (teacher, self, noisy)
  chat_policies   a prompted chat LLM as judge and intervener (the paper setting)
  intervention    which judge and intervener a run uses, built from its spec
  engine/         generation engines (transformers, vLLM, mixed-policy for MENTOR)
  steps           split a response into steps
  prompting       the one place a prompt becomes token ids
Training
  rl_loop         a segment's iterations: rollout then train, checkpointing, resume
  trainer         DeepSpeed engine, optimizer state, one optimisation round
  batching        minibatch plans, each rank's share, packing rows into tensors
  logprobs        recomputed per-token log-probs (chunked LM head)
  distributed     data parallelism across a segment's processes
Data and rewards
  tasks/          the toy tasks (generator, reward, step oracle) and their registry
  datasets/       readers of the paper setting's datasets
  rewards/        verifiable rewards of the paper setting (math, code)
  sandbox         running model-generated code in a separate, limited process
  tokenizer       the toy models' character tokenizer
  models          the toy Qwen3-architecture model configs
Configuration and the workflow
  config/         the config model: every key, its meaning and default; loading, the JSON
                  schema, runs = base run + overrides + (lab seed, RL seed) (config.runs)
  config_reference  docs/config.md, generated from the config model
  pipeline        what each Snakemake rule reads and each target needs
  job_settings    each job's ``settings`` param: the config its output depends on
  registry        name -> function registries
  cpu_numerics    one CPU kernel family on every x86 processor (set here, before torch loads)
Stages
  prepare, pretrain, fetch, filter, evaluate, sft, segment, train, rollout, summarize,
  track, tune
Reporting
  summarize       results tables; stats (intervals over seeds), passk, plots
  inspector       an HTML page per iteration to read trajectories
  tracking        the only module that imports mlflow
  schemas, io     one pyarrow schema per table; atomic writes
  progress        progress bars
"""

from mintrl.cpu_numerics import pin_cpu_numerics

# Before any module imports torch: each CPU dispatcher reads its variable once (cpu_numerics).
pin_cpu_numerics()

__version__ = "0.1.0"
