"""Reference scores ("anchors") of the advantage regression, fixed during an iteration
(docs/design.md §1.2). Registered by name; each is a pure function of per-token tensors.

All take (B, T) tensors over response positions: ``old`` = log π_t of each token (fp32,
temperature 1, the training pass's batching), ``generator`` = the log-prob its generator
recorded (the intervener's for intervention tokens), ``intervention`` = 1 at intervention
tokens, ``mask`` = 1 at response tokens; return (B,).
"""

from __future__ import annotations

import torch

from mintrl.registry import Registry

ANCHORS = Registry("anchor")
register_anchor = ANCHORS.register
get_anchor = ANCHORS.lookup


@register_anchor("proxy")
def proxy_anchor(old, generator, intervention, mask, c=None):
    """``Σ_k log π_t(y_k | ·)`` over all tokens: at θ = π_t the residual is exactly −(r − V̂)."""
    return (old * mask).sum(-1)


@register_anchor("const")
def const_anchor(old, generator, intervention, mask, c=None):
    """``Σ_policy log π_t + c · n_intervention``: intervention tokens scored by a constant c ≤ 0."""
    if c is None:
        raise ValueError("const anchor needs c (config `const_c`, or measured from corrections)")
    policy = mask * (1 - intervention)
    return (old * policy).sum(-1) + c * (mask * intervention).sum(-1)


@register_anchor("intervener")
def intervener_anchor(old, generator, intervention, mask, c=None):
    """``Σ_policy log π_t + Σ_intervention log π_I``: the intervener's own log-probs."""
    if torch.isnan(generator[(mask * intervention).bool()]).any():
        raise ValueError("intervener anchor needs the intervener's log-probs; they are unknown "
                         "when its tokenizer differs from the policy's")
    policy = mask * (1 - intervention)
    return (old * policy).sum(-1) + (torch.nan_to_num(generator) * mask * intervention).sum(-1)
