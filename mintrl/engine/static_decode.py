"""Plain-round sampling with every shape fixed (``rl.generation_cache: static``).

A batch of b prompts, left-padded to a width P rounded up to ``BUCKET`` tokens, decodes into a
``StaticCache`` of P + max_new_tokens positions with a (b, P + max_new_tokens) attention mask
that is filled column by column; finished rows stay in the batch and are fed padding (their
samples are discarded). Every decode step then has the same input shapes, so on CUDA it is
compiled once per (b, P + max_new_tokens) into a CUDA graph (``torch.compile``,
``mode="reduce-overhead"``): at batch 256 a Qwen3-1.7B decode step is mostly kernel launches,
which the graph replays at once. The sampling and the recorded log-probs are those of the
dynamic loop (``TransformersEngine``): raw fp32 log-probs, the filters of ``filter_logits``.
"""

from __future__ import annotations

import torch
from transformers import StaticCache

from mintrl.engine.base import Generation, Sampling
from mintrl.engine.decoding import cache_kwarg, left_padded, sample_next

BUCKET = 64  # prompt widths are rounded up to this, so batches share compiled graphs


class StaticDecoder:
    def __init__(self, model, eos: int, pad: int):
        self.model, self.eos, self.pad = model, eos, pad
        self._cache_kw = cache_kwarg(model)
        # compiled on CUDA only: on a CPU the graph saves little and compiling costs minutes
        self.compile = self.device.type == "cuda"
        self._caches: dict[tuple[int, int], StaticCache] = {}
        self._step = (torch.compile(self._forward, mode="reduce-overhead", dynamic=False)
                      if self.compile else self._forward)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def _forward(self, ids, mask, positions, cache_position, cache):
        """(b, V) logits after the last column of ``ids``."""
        return self.model(input_ids=ids, attention_mask=mask, position_ids=positions,
                          cache_position=cache_position, logits_to_keep=1,
                          **{self._cache_kw: cache}).logits[:, -1, :]

    def _cache(self, batch: int, length: int) -> StaticCache:
        """One cache per shape, reset between batches: a new cache object would be a new
        graph input and its buffers new addresses for the CUDA graph."""
        key = (batch, length)
        if key not in self._caches:
            self._caches[key] = StaticCache(config=self.model.config, max_cache_len=length)
        else:
            self._caches[key].reset()
        return self._caches[key]

    # no_grad, not inference_mode: torch.compile has had crashes on inference tensors, and the
    # CUDA graph gains nothing from inference mode
    @torch.no_grad()
    def generate(self, prompts: list[list[int]], sampling: Sampling,
                 gen: torch.Generator) -> Generation:
        n, dev, steps = len(prompts), self.device, sampling.max_new_tokens
        width = -(-max(map(len, prompts)) // BUCKET) * BUCKET
        ids, mask = left_padded(prompts, self.pad)
        pad_cols = width - ids.shape[1]
        ids = torch.nn.functional.pad(ids, (pad_cols, 0), value=self.pad)
        mask = torch.nn.functional.pad(mask, (pad_cols, steps), value=0)  # (n, width + steps)
        ids, mask = ids.to(dev), mask.to(dev)
        cache = self._cache(n, width + steps)
        positions = (mask[:, :width].cumsum(-1) - 1).clamp(min=0)
        # the prefill runs eagerly: its shape is the prompt block's, seen once per batch
        logits = self._forward(ids, mask, positions, torch.arange(width, device=dev), cache)
        next_pos = positions[:, -1] + 1
        tokens: list[list[int]] = [[] for _ in range(n)]
        logps: list[list[float]] = [[] for _ in range(n)]
        reasons = ["length"] * n
        running = torch.ones(n, dtype=torch.bool)
        for step in range(steps):
            nxt, lp = sample_next(logits, sampling, gen)  # (n,), (n,)
            for row, tok, logp, on in zip(range(n), nxt.tolist(), lp.tolist(),
                                          running.tolist(), strict=True):
                if on:
                    tokens[row].append(tok)
                    logps[row].append(logp)
                    if tok == self.eos:
                        reasons[row] = "stop"
            running &= nxt != self.eos
            if step == steps - 1 or not running.any():
                break
            feed = torch.where(running, nxt, torch.full_like(nxt, self.pad)).to(dev)
            mask[:, width + step] = 1
            cache_position = torch.tensor([width + step], device=dev)
            logits = self._step(feed[:, None], mask, next_pos[:, None], cache_position, cache)
            if self.compile:  # the CUDA graph's output buffer is overwritten by the next replay
                logits = logits.clone()
            next_pos = next_pos + 1
        return Generation(tokens, logps, reasons)
