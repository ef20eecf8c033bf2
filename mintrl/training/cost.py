"""What an iteration costs, counted where the work happens, so that "the same budget" can be
checked across methods (issue 28): the tokens a rollout holds and who wrote them, the tokens
the teacher reads, and FLOPs by the standard rule of 2N per token for a forward pass and 6N for
a forward and backward pass (Kaplan et al., 2020), N the model's parameters.

A ``TokenMeter`` counts every token a model's decoder processes (a forward pre-hook, so
generation, scoring and training passes are all seen, padding included: it is computed too).
Diagnostics that only log (``diagnostic()``: the gradient parts, the update's KL) are left out:
they are the tool's cost, not the method's.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np
import pandas as pd
import torch

from mintrl.schemas import INTERVENTION

_DIAGNOSTIC: ContextVar[bool] = ContextVar("diagnostic", default=False)


@contextmanager
def diagnostic():
    """Passes inside are not counted: they measure the update, they are not part of it."""
    token = _DIAGNOSTIC.set(True)
    try:
        yield
    finally:
        _DIAGNOSTIC.reset(token)


def parameter_count(model) -> int:
    """N: every parameter (ZeRO-3 partitions them: ``ds_numel`` is the whole tensor's)."""
    return int(sum(getattr(p, "ds_numel", p.numel()) for p in model.parameters()))


class TokenMeter:
    """Tokens ``model``'s decoder processed, with gradients (training passes) and without
    (sampling, scoring); ``flops`` turns a difference of two ``counts()`` into FLOPs."""

    def __init__(self, model):
        self.params = parameter_count(model)
        self.grad = 0
        self.nograd = 0
        decoder = model.get_decoder() if hasattr(model, "get_decoder") else model
        self._handle = decoder.register_forward_pre_hook(self._count, with_kwargs=True)

    def _count(self, module, args, kwargs) -> None:
        if _DIAGNOSTIC.get():
            return
        x = kwargs.get("input_ids", args[0] if args else None)
        if x is None:
            x = kwargs.get("inputs_embeds")
        if x is None:
            return
        n = int(x.shape[0]) * int(x.shape[1])
        if torch.is_grad_enabled():
            self.grad += n
        else:
            self.nograd += n

    def counts(self) -> tuple[int, int]:
        """(tokens with gradients, tokens without) so far."""
        return self.grad, self.nograd

    def flops(self, since: tuple[int, int], until: tuple[int, int] | None = None) -> float:
        """FLOPs of the passes between two ``counts()`` (``until``: now): 6N per token with
        gradients (forward and backward), 2N per token without."""
        grad, nograd = until or self.counts()
        return float(6 * self.params * (grad - since[0]) + 2 * self.params * (nograd - since[1]))

    def tokens(self, since: tuple[int, int]) -> int:
        return (self.grad - since[0]) + (self.nograd - since[1])

    def close(self) -> None:
        self._handle.remove()


def rollout_costs(df: pd.DataFrame) -> dict[str, float]:
    """``cost/rollout_tokens``: response tokens of the iteration's rollouts, whoever wrote
    them; ``cost/teacher_written_tokens``: those an intervener or a guiding teacher wrote."""
    written = sum(int(np.sum(np.asarray(p) == INTERVENTION)) for p in df["provenance"])
    return {"cost/rollout_tokens": float(df["response_ids"].map(len).sum()),
            "cost/teacher_written_tokens": float(written)}
