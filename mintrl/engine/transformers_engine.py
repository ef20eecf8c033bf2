"""Generation with a Hugging Face causal LM and our own decode loop (KV cache, left padding).

Why our own loop rather than ``model.generate``: we need the raw-model log-prob of every
sampled token in fp32, rows that leave the batch as soon as they finish, and (for MInTRL's
chunked rollouts) caches we can keep and crop between calls.

Two caches for plain rounds (``rl.generation_cache``): ``dynamic`` (the default: finished rows
leave the batch, the cache grows in place) and ``static`` (transformers' ``StaticCache``: every
shape fixed for the whole batch, so on CUDA the decode step is compiled once into a CUDA graph
with ``torch.compile(mode="reduce-overhead")`` and the per-step launch overhead, most of a
decode step at batch 256, goes away; finished rows stay in the batch, fed padding). On CPU
``static`` runs the same loop eagerly.
"""

from __future__ import annotations

import torch

from mintrl.engine.base import Generation, Sampling
from mintrl.engine.decoding import (
    cache_kwarg,
    drop_finished,
    left_padded,
    sample_next,
)
from mintrl.engine.kv_cache import growing_cache
from mintrl.progress import progress as progress_bar


class TransformersEngine:
    """Batched sampling from a transformers causal LM (CPU or GPU)."""

    def __init__(self, model, eos_token_id: int, pad_token_id: int, batch_size: int = 256,
                 cache: str = "dynamic"):
        if cache not in ("dynamic", "static"):
            raise ValueError(f"generation_cache: {cache!r} is not one of 'dynamic', 'static'")
        self.model = model
        self.eos = eos_token_id
        self.pad = pad_token_id
        self.batch_size = batch_size
        self._cache_kw = cache_kwarg(model)
        self._static = None
        if cache == "static":
            from mintrl.engine.static_decode import StaticDecoder

            self._static = StaticDecoder(model, eos_token_id, pad_token_id)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def chunked(self, prompts: list[list[int]], eos: int, pad: int, sampling: Sampling,
                generator: torch.Generator):
        """A decoder that pauses every chunk for MInTRL's review (``ChunkedDecoder``)."""
        from mintrl.engine.chunked import ChunkedDecoder

        return ChunkedDecoder(self.model, prompts, eos, pad, sampling, generator)

    def generate(self, prompt_token_ids: list[list[int]], sampling: Sampling,
                 progress: str | None = None) -> Generation:
        gen = torch.Generator(device="cpu").manual_seed(sampling.seed)
        out = Generation([], [], [])
        with progress_bar(total=len(prompt_token_ids), desc=progress or "", unit="seq",
                          disable=progress is None) as bar:
            for i in range(0, len(prompt_token_ids), self.batch_size):
                part = self._generate_batch(prompt_token_ids[i : i + self.batch_size],
                                            sampling, gen)
                out.token_ids += part.token_ids
                out.logprobs += part.logprobs
                out.finish_reasons += part.finish_reasons
                bar.update(len(part.token_ids))
        return out

    def _generate_batch(self, prompts: list[list[int]], sampling: Sampling, gen) -> Generation:
        if self._static is not None:  # outside inference mode (StaticDecoder.generate)
            return self._static.generate(prompts, sampling, gen)
        return self._dynamic_batch(prompts, sampling, gen)

    @torch.inference_mode()
    def _dynamic_batch(self, prompts: list[list[int]], sampling: Sampling, gen) -> Generation:
        n, dev = len(prompts), self.device
        ids, mask = left_padded(prompts, self.pad)
        ids, mask = ids.to(dev), mask.to(dev)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        cache = growing_cache(self.model.config, room=sampling.max_new_tokens)
        # logits of the last position only: (b, T, V) logits over a 152k vocabulary would be
        # gigabytes for a batch of long prompts, and only the last position is sampled from
        logits = self.model(
            input_ids=ids, attention_mask=mask, position_ids=positions,
            logits_to_keep=1, **{self._cache_kw: cache},
        ).logits[:, -1, :]

        tokens: list[list[int]] = [[] for _ in range(n)]
        logps: list[list[float]] = [[] for _ in range(n)]
        reasons = ["length"] * n
        alive = torch.arange(n)  # original row of each batch row still generating
        next_pos = positions[:, -1] + 1
        for step in range(sampling.max_new_tokens):
            nxt, lp = sample_next(logits, sampling, gen)  # (b,), (b,)
            done = nxt == self.eos
            # One conversion per step: indexing tensors element by element cost 3.8 ms per
            # step at batch 512 (0.04 ms as lists), on the order of a toy model's forward.
            for row, tok, logp, stop in zip(
                alive.tolist(), nxt.tolist(), lp.tolist(), done.tolist(), strict=True
            ):
                tokens[row].append(tok)
                logps[row].append(logp)
                if stop:
                    reasons[row] = "stop"
            if step == sampling.max_new_tokens - 1:
                break
            left = drop_finished(done, [cache], dev, alive, nxt, mask, next_pos)
            if left is None:
                break
            alive, nxt, mask, next_pos = left
            mask = torch.cat([mask, mask.new_ones((len(alive), 1))], dim=1)
            logits = self.model(
                input_ids=nxt.to(dev)[:, None],
                attention_mask=mask,
                position_ids=next_pos[:, None],
                **{self._cache_kw: cache},
            ).logits[:, -1, :]
            next_pos = next_pos + 1
        return Generation(tokens, logps, reasons)
