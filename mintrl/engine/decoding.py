"""What every decode loop shares (TransformersEngine's, the static and chunked decoders,
MENTOR's mixed policy): the sampling filters and draws, left padding, dropping finished rows
from the batch and its KV caches, and the cache keyword of the installed transformers."""

from __future__ import annotations

import inspect

import torch

from mintrl.engine.base import Sampling


def filter_logits(logits: torch.Tensor, sampling: Sampling) -> torch.Tensor:
    """Temperature, top-k and top-p applied to (B, V) logits; removed entries become -inf."""
    logits = logits / sampling.temperature
    if sampling.top_k and sampling.top_k < logits.shape[-1]:
        kth = torch.topk(logits, sampling.top_k, dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if sampling.top_p < 1.0:
        sorted_logits, order = torch.sort(logits, dim=-1, descending=True)
        probs = torch.softmax(sorted_logits, dim=-1)
        # Drop a token when the mass before it already reaches top_p (the first always stays).
        drop_sorted = (probs.cumsum(-1) - probs) >= sampling.top_p
        drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
        logits = logits.masked_fill(drop, float("-inf"))
    return logits


def sample_next(logits: torch.Tensor, sampling: Sampling,
                gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """One decode step's draw from (b, V) logits: the tokens (b,) sampled under
    ``sampling``'s filters, and their raw log-probs (b,) in fp32 (the model's distribution at
    temperature 1, what the trainer recomputes), both on the CPU."""
    logits = logits.float()
    raw = torch.log_softmax(logits, dim=-1)
    probs = torch.softmax(filter_logits(logits, sampling), dim=-1)
    nxt = draw_tokens(probs, gen)
    return nxt.cpu(), raw.gather(-1, nxt[:, None]).squeeze(1).cpu()


def draw_tokens(probs: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """One token per row of (b, V) probabilities, seeded by the CPU generator ``gen``; (b,)
    ids on ``probs.device``. On the CPU ``torch.multinomial``; on an accelerator
    ``inverse_cdf_draw``, which never copies the probabilities off the device."""
    if probs.device.type == "cpu":
        return torch.multinomial(probs, 1, generator=gen).squeeze(1)
    return inverse_cdf_draw(probs, gen)


def inverse_cdf_draw(probs: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """One token per row of (b, V) probabilities, on their device, from b uniforms of the
    CPU generator ``gen``: the first token whose cumulative mass exceeds u·total, so a token
    of zero mass is never drawn. On an accelerator this replaces ``torch.multinomial`` on the
    host, which needed the whole (b, V) array copied off the device every step (155 MB and
    about 0.5 s at batch 256 over Qwen3's 152k vocabulary). A seed gives the same draws on
    the same kind of device, not the CPU's. A row with no mass or a NaN (broken logits) is an
    error, as it is for ``torch.multinomial``. Returns (b,) int64 ids on ``probs.device``."""
    # fp64 sums on CUDA (no drift over 152k entries); fp32 where a device lacks fp64 (MPS)
    wide = torch.float64 if probs.device.type in ("cuda", "cpu") else torch.float32
    u = torch.rand(probs.shape[0], 1, generator=gen, dtype=torch.float64)
    cdf = probs.to(wide).cumsum(-1)
    total = cdf[:, -1:]
    bad = ~(total[:, 0] > 0)  # NaN compares False: caught here too
    if bool(bad.any()):
        rows = bad.nonzero()[:, 0].tolist()
        raise ValueError(f"sampling: rows {rows[:8]} have no probability mass (NaN or "
                         "all-zero probabilities: the model's logits are broken)")
    target = u.to(device=probs.device, dtype=wide) * total
    return torch.searchsorted(cdf, target, right=True).clamp_(max=probs.shape[-1] - 1)[:, 0]


def left_padded(prompts: list[list[int]], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(ids, attention mask), each (B, W): every prompt ends at column W-1, so one decode step
    appends one column for all rows."""
    n, width = len(prompts), max(map(len, prompts))
    ids = torch.full((n, width), pad, dtype=torch.long)
    mask = torch.zeros((n, width), dtype=torch.long)
    for i, p in enumerate(prompts):
        ids[i, width - len(p) :] = torch.tensor(p)
        mask[i, width - len(p) :] = 1
    return ids, mask


def drop_finished(done: torch.Tensor, caches: list, device, alive: torch.Tensor,
                  *rows: torch.Tensor):
    """Rows that just produced EOS leave the batch and every KV cache in ``caches`` (on
    ``device``). done: (b,) bool; alive and each of ``rows``: per-row tensors of the batch.
    Returns (alive, *rows) for the rows still generating, or None when none is left."""
    keep = (~done).nonzero().squeeze(1)
    if keep.numel() == 0:
        return None
    if keep.numel() == len(alive):
        return (alive, *rows)
    for cache in caches:
        cache.batch_select_indices(keep.to(device))
    return (alive[keep], *(t[keep.to(t.device)] for t in rows))


def cache_kwarg(model) -> str:
    """transformers renamed ``past_key_values`` to ``cache``; accept both generations."""
    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params else "past_key_values"
