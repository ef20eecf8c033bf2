"""The pyarrow schema of every table the pipeline writes: one place per table."""

from __future__ import annotations

import pyarrow as pa

# A task split: one row per problem (prepare -> data/<task>/<split>.parquet).
PROBLEMS = pa.schema(
    [
        ("id", pa.string()),
        ("task", pa.string()),
        ("split", pa.string()),
        ("difficulty", pa.int32()),
        ("prompt", pa.string()),
        ("solution", pa.string()),
        ("spec", pa.string()),  # task-specific JSON the reward and oracle read
    ]
)

# Evaluation: one row per sample (evaluate -> .../samples.parquet).
EVAL_SAMPLES = pa.schema(
    [
        ("problem_id", pa.string()),
        ("split", pa.string()),
        ("difficulty", pa.int32()),
        ("sample", pa.int32()),
        ("response", pa.string()),
        ("response_len", pa.int32()),  # tokens, EOS included when present
        ("finish_reason", pa.string()),  # "stop" (EOS) or "length"
        ("reward", pa.float32()),
        ("strict", pa.bool_()),  # every step right (tasks with an oracle)
        ("step_accuracy", pa.float32()),  # share of reference steps right before the first error
    ]
)
