"""MInTRL: Minimal Intervention Reinforcement Learning.

Modules, one responsibility each:
  tasks/      synthetic toy tasks (generator, reward, step oracle) and their registry
  steps       splitting a response into reasoning/code steps
  sandbox     running model-generated code in a separate, limited process
  tokenizer   the character-level tokenizer of the toy models (Hugging Face format)
  models      the toy Qwen3-architecture model configs
  pretrain    stage: pre-train the toy base policy and teacher
  engine/     generation engines (transformers now)
  evaluate    stage: Pass@1 / pass@k evaluation
  prepare     stage: write task splits to Parquet
  filter      stage: drop training prompts the base policy always solves
  rollout     stage: a checkpoint's rollouts with rewards (on-policy sampling, prompt choice)
  train       stage: one iteration of optimisation on a rollout file
  segment     stage: iterations start..end of a run (rollout + train), resumable
  summarize   stage: results table and plots
  track       stage: log a run into MLflow (through tracking)
  config      the config model, run resolution (base run + overrides + seed), JSON schema
  advantages  advantage estimators, registered by name (GRPO)
  objectives  losses, pure functions registered by name (GRPO clipped surrogate)
  trainer     DeepSpeed engine, optimizer state, one optimisation round
  tracking    the only module that imports mlflow
  logprobs    recomputed per-token log-probs
  schemas     the pyarrow schema of every table
  io          atomic file writes and table readers
  cpu_numerics  one CPU kernel family on every x86 processor (set here, before torch loads)
"""

from mintrl.cpu_numerics import pin_cpu_numerics

# Before any module imports torch: each CPU dispatcher reads its variable once (cpu_numerics).
pin_cpu_numerics()

__version__ = "0.1.0"
