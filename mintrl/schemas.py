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
        ("chat", pa.bool_()),  # prompt shown as a chat turn (mintrl.prompting)
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

# Filter: the base policy's pass rate on each training prompt (filter -> .../pass_rates.parquet).
PASS_RATES = pa.schema(
    [
        ("problem_id", pa.string()),
        ("difficulty", pa.int32()),
        ("samples", pa.int32()),
        ("pass_rate", pa.float32()),
        ("kept", pa.bool_()),  # in the filtered training set
    ]
)

# Provenance of a response token: who wrote it.
POLICY, INTERVENTION = 0, 1
# A review's entry in `verdicts`: the earliest wrong step, or one of these.
NO_ERROR, NO_VERDICT = -1, -2  # NO_VERDICT: a model judge's answer could not be parsed

# Rollouts: one row per trajectory (rollout/segment -> results/runs/.../iter_<i>/rollouts.parquet).
# Raw rewards only: advantages are computed at train time.
ROLLOUTS = pa.schema(
    [
        ("run", pa.string()),
        ("iteration", pa.int32()),
        ("problem_id", pa.string()),
        ("difficulty", pa.int32()),
        ("sample", pa.int32()),  # index within the prompt's group
        ("kind", pa.string()),  # "on-policy" | "control" | "semi" | "expert"
        ("prompt_ids", pa.list_(pa.int32())),
        ("response_ids", pa.list_(pa.int32())),  # EOS included when produced
        ("provenance", pa.list_(pa.int8())),  # per response token: POLICY or INTERVENTION
        ("logprobs", pa.list_(pa.float32())),  # generator's raw log-prob of each response token
        ("reward", pa.float32()),
        ("finish_reason", pa.string()),  # "stop" (EOS) or "length"
        ("reviews", pa.int16()),  # judge reviews made (MInTRL)
        ("interventions", pa.int16()),  # corrections written (MInTRL)
        ("verdicts", pa.list_(pa.int32())),  # per review: wrong step, NO_ERROR or NO_VERDICT
        ("text", pa.string()),  # decoded response
    ]
)
