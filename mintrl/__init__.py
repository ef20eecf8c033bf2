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
  schemas     the pyarrow schema of every table
  io          atomic file writes and table readers
"""

__version__ = "0.1.0"
