"""Minibatches of an iteration's rollouts: the shuffled plan, each rank's share, and packing
rows into right-padded tensors with their provenance (shared by the RL and SFT trainers)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from mintrl.training.distributed import rank, world
from mintrl.training.logprobs import pack_right_padded


@dataclass
class MicroBatch:
    """Packed sequences of one forward pass; tensors are (b, T)."""

    rows: np.ndarray  # indices into the iteration's rollout table
    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    response_mask: torch.Tensor  # 1 at response tokens (predicted positions)
    intervention: torch.Tensor  # 1 at response tokens an intervener wrote
    generator_logprobs: torch.Tensor  # log-prob recorded by each token's generator
    guided: torch.Tensor  # (b,) 1 for rows MENTOR drew from the student/teacher mixture


def rank_share(mini: list[np.ndarray], micro_batch_size: int) -> list[np.ndarray]:
    """This rank's rows of one minibatch (``plan_minibatches``' micro-batches), split again
    into micro-batches of at most ``micro_batch_size`` rows. One process: unchanged."""
    if world() == 1:
        return mini
    mine = np.array_split(np.concatenate(mini), world())[rank()]
    if len(mine) == 0:
        raise ValueError(f"rl.minibatch_size: a minibatch of {sum(map(len, mini))} rollouts "
                         f"cannot give each of {world()} ranks one; use fewer processes or a "
                         "larger minibatch")
    n_micro = -(-len(mine) // micro_batch_size)
    return [np.sort(m) for m in np.array_split(mine, n_micro)]


def plan_minibatches(n: int, spec, seed: int) -> list[list[np.ndarray]]:
    """Shuffled minibatches of about ``minibatch_size`` rows, each split into micro-batches
    of at most ``micro_batch_size`` rows, for ``epochs`` passes (``spec``: a RunSpec or an
    SFTSpec). Returns index arrays only (no tensors yet)."""
    rng = np.random.default_rng(seed)
    plans = []
    for _ in range(spec.epochs):
        order = rng.permutation(n)
        n_mini = max(1, round(n / spec.minibatch_size))
        for mini in np.array_split(order, n_mini):
            n_micro = -(-len(mini) // spec.micro_batch_size)
            plans.append([np.sort(m) for m in np.array_split(mini, n_micro)])
    return plans


def pack(df: pd.DataFrame, rows: np.ndarray, pad_id: int) -> MicroBatch:
    prompts = [list(df["prompt_ids"].iat[i]) for i in rows]
    responses = [list(df["response_ids"].iat[i]) for i in rows]
    ids, attn, resp = pack_right_padded(prompts, responses, pad_id)
    inter = torch.zeros(ids.shape, dtype=torch.float32)
    gen = torch.zeros(ids.shape, dtype=torch.float32)
    has = "provenance" in df.columns
    for b, i in enumerate(rows):
        start, n = len(prompts[b]), len(responses[b])
        if has:
            inter[b, start : start + n] = torch.tensor(list(df["provenance"].iat[i]),
                                                       dtype=torch.float32)
            gen[b, start : start + n] = torch.tensor(list(df["logprobs"].iat[i]),
                                                     dtype=torch.float32)
    guided = torch.zeros(len(rows))
    if "kind" in df.columns:
        guided = torch.tensor((df["kind"].to_numpy()[rows] == "guided").astype("float32"))
    return MicroBatch(rows, ids, attn, resp, inter, gen, guided)
