"""The algorithms as pure functions: objectives (the Objective interface), advantages, anchors,
and the per-rollout targets the trainer computes from a rollout table."""
