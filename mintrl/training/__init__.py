"""Training: the RL loop of a segment (rl_loop), one optimisation round with DeepSpeed
(trainer), minibatches (batching), recomputed log-probs (logprobs), data parallelism
(distributed)."""
