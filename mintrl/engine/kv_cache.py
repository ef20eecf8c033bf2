"""A KV cache that grows in place: what every decode loop of the transformers engine uses.

transformers' ``DynamicLayer`` concatenates the whole cache with each new token, so a decode
step copies every key and value computed so far: at batch 128 and 300 cached tokens that copy
was half of a toy model's step time. ``GrowingLayer`` keeps keys and values in a buffer with
room to spare and writes each step's column into it (the model sees views of the filled part):
the same numbers, step time 1.7x lower at that size (``benchmarks/round_cost.py`` measures
the rounds that use it).
"""

from __future__ import annotations

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer


class GrowingLayer(DynamicLayer):
    """One layer's keys and values, (b, heads, n, head_dim) views of buffers of capacity
    ``n + room``; a full buffer doubles (amortised: each token is copied O(1) times)."""

    def __init__(self, room: int = 64):
        super().__init__()
        self.room, self.n = max(int(room), 1), 0

    def _allocate(self, like: torch.Tensor, capacity: int, keep: int) -> None:
        b, h, _, d = like.shape
        kb = like.new_empty((b, h, capacity, d))
        vb = like.new_empty((b, h, capacity, d))
        if keep:
            kb[:, :, :keep] = self._kb[:, :, :keep]
            vb[:, :, :keep] = self._vb[:, :, :keep]
        self._kb, self._vb = kb, vb

    def _views(self) -> None:
        self.keys, self.values = self._kb[:, :, : self.n], self._vb[:, :, : self.n]

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        new = key_states.shape[-2]
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
            self._allocate(key_states, new + self.room, 0)
        elif self.n + new > self._kb.shape[2]:
            self._allocate(self._kb, max(2 * self._kb.shape[2], self.n + new + self.room),
                           self.n)
        self._kb[:, :, self.n : self.n + new] = key_states
        self._vb[:, :, self.n : self.n + new] = value_states
        self.n += new
        self._views()
        return self.keys, self.values

    def get_seq_length(self) -> int:
        return self.n if self.is_initialized else 0

    def crop(self, tokens_to_remove: int) -> None:
        if tokens_to_remove > 0:
            raise ValueError("crop takes a negative count (tokens to remove)")
        if tokens_to_remove and self.is_initialized:
            self.n = max(self.n + tokens_to_remove, 0)
            self._views()

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        if self.is_initialized:
            self._kb, self._vb = self._kb[indices], self._vb[indices]
            self._views()

    def batch_repeat_interleave(self, repeats: int) -> None:
        if self.is_initialized:
            self._kb = self._kb.repeat_interleave(repeats, dim=0)
            self._vb = self._vb.repeat_interleave(repeats, dim=0)
            self._views()

    def reset(self) -> None:
        self.n = 0
        super().reset()


def growing_cache(config, room: int = 64,
                  data: list[tuple[torch.Tensor, torch.Tensor]] | None = None) -> DynamicCache:
    """A ``DynamicCache`` for ``config`` whose full-attention layers grow in place (sliding-
    window layers and other kinds stay transformers' own). ``room``: tokens expected beyond
    the first write (a decode loop's budget), so that the buffer never has to move. ``data``:
    keys and values (b, heads, n, head_dim) per layer to start from."""
    cache = DynamicCache(config=config)
    cache.layers = [GrowingLayer(room) if type(layer) is DynamicLayer else layer
                    for layer in cache.layers]
    for i, (k, v) in enumerate(data or []):
        cache.layers[i].update(k, v)
    return cache
