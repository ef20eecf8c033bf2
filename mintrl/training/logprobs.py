"""Per-token log-probs of given responses under a causal LM (teacher forcing, fp32).

Used wherever a log-prob must be *recomputed* rather than recorded while sampling: old-policy
and anchor log-probs in training, a teacher's scores on a policy's tokens, diagnostics.
"""

from __future__ import annotations

import torch
from torch.utils.checkpoint import checkpoint

# Positions per LM-head chunk in ``lm_logprobs``: 1024 x 151,936 fp32 logits are 0.6 GB, and
# the backward pass holds about four such buffers at once.
HEAD_CHUNK = 1024


def pack_right_padded(prompts: list[list[int]], responses: list[list[int]], pad_id: int):
    """(input_ids, attention_mask, response_mask), each (B, T): prompt ⊕ response, right-padded.

    ``response_mask[b, t]`` is 1 where token t of row b is a response token.
    """
    seqs = [p + r for p, r in zip(prompts, responses, strict=True)]
    width = max(map(len, seqs))
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    attn = torch.zeros((len(seqs), width), dtype=torch.long)
    resp = torch.zeros((len(seqs), width), dtype=torch.long)
    for b, (p, s) in enumerate(zip(prompts, seqs, strict=True)):
        ids[b, : len(s)] = torch.tensor(s, dtype=torch.long)
        attn[b, : len(s)] = 1
        resp[b, len(p) : len(s)] = 1
    return ids, attn, resp


def _logits_logprobs(logits: torch.Tensor, targets: torch.Tensor, with_entropy: bool):
    """(n, V) logits, (n,) next tokens -> (n,) log-probs and (n,) entropies (zeros unless
    ``with_entropy``), both fp32: log p = l_y − logsumexp(l), H = logsumexp(l) − Σ p l."""
    logits = logits.float()
    lse = torch.logsumexp(logits, dim=-1)
    lp = logits.gather(-1, targets[:, None]).squeeze(-1) - lse
    if not with_entropy:
        return lp, torch.zeros_like(lp)
    return lp, lse - (torch.softmax(logits, dim=-1) * logits).sum(-1)


def _head_logprobs(head, hidden: torch.Tensor, targets: torch.Tensor, with_entropy: bool):
    """The same from (n, d) hidden states through the LM head."""
    return _logits_logprobs(head(hidden), targets, with_entropy)


def lm_logprobs(model, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                positions: torch.Tensor, with_entropy: bool = False, chunk: int = HEAD_CHUNK):
    """(B, T) log p(ids_t | ids_<t) at the positions where ``positions`` (B, T) is 1, 0
    elsewhere (column 0 always); with ``with_entropy`` also the entropy (nats, temperature 1)
    of the distribution each of those tokens was drawn from, else None.

    The decoder runs once; the LM head runs only at those positions, ``chunk`` at a time, each
    chunk's logits recomputed in the backward pass instead of kept (activation checkpointing).
    So the (B, T, V) logits never exist: over Qwen3's 151,936-token vocabulary they are 10 GB
    in bf16 at 8 x 4096 tokens, and their fp32 log-softmax, kept for the backward pass, 20 GB
    more. ``model``: a Hugging Face causal LM or a DeepSpeed engine around one (its module's
    decoder and head are called). Under ZeRO-3 the model's own forward computes the logits.
    """
    lm = getattr(model, "module", model)
    sel = positions[:, 1:].bool()  # the hidden state at t - 1 predicts token t
    targets = input_ids[:, 1:][sel]  # (N,)
    if hasattr(next(lm.parameters()), "ds_id"):
        # ZeRO-3 gathers and frees each weight around the engine's own forward; calling the
        # decoder and the tied head apart trained other weights (tested), so ZeRO-3 takes the
        # full logits through the engine (their log-softmax at response positions only)
        logits = model(input_ids=input_ids, attention_mask=attention_mask,
                       use_cache=False).logits[:, :-1][sel]  # (N, V)
        lp, ent = _logits_logprobs(logits, targets, with_entropy)
        lps, ents = [lp], [ent]
    else:
        hidden = lm.get_decoder()(input_ids=input_ids, attention_mask=attention_mask,
                                  use_cache=False).last_hidden_state  # (B, T, d)
        h = hidden[:, :-1][sel]  # (N, d)
        head = lm.get_output_embeddings()
        lps, ents = [], []
        for start in range(0, max(len(targets), 1), chunk):
            args = (head, h[start : start + chunk], targets[start : start + chunk],
                    with_entropy)
            lp, ent = (checkpoint(_head_logprobs, *args, use_reentrant=False)
                       if torch.is_grad_enabled() else _head_logprobs(*args))
            lps.append(lp)
            ents.append(ent)
    rows, cols = torch.nonzero(sel, as_tuple=True)

    def scatter(values: list[torch.Tensor]) -> torch.Tensor:
        """The chunks' values at their (row, position) in a (B, T) tensor (out of place, so
        the gradient flows back to the chunks)."""
        full = torch.zeros(input_ids.shape, dtype=torch.float32, device=input_ids.device)
        return full.index_put((rows, cols + 1), torch.cat(values)[: len(rows)])

    return scatter(lps), scatter(ents) if with_entropy else None


@torch.no_grad()
def response_logprobs(
    model, prompts: list[list[int]], responses: list[list[int]], pad_id: int, batch_size: int = 64
) -> list[list[float]]:
    """Log-prob of every response token given the prompt and the response before it."""
    out: list[list[float]] = []
    dev = next(model.parameters()).device
    for i in range(0, len(prompts), batch_size):
        p, r = prompts[i : i + batch_size], responses[i : i + batch_size]
        ids, attn, resp = pack_right_padded(p, r, pad_id)
        lp = lm_logprobs(model, ids.to(dev), attn.to(dev), resp.to(dev))[0].cpu()
        for b in range(len(p)):
            out.append(lp[b][resp[b].bool()].tolist())
    return out


@torch.no_grad()
def response_entropies(
    model, prompts: list[list[int]], responses: list[list[int]], pad_id: int, batch_size: int = 64
) -> list[list[float]]:
    """Entropy (nats, temperature 1) of the model's next-token distribution at every response
    position, i.e. of the distribution each response token was drawn from."""
    out: list[list[float]] = []
    dev = next(model.parameters()).device
    for i in range(0, len(prompts), batch_size):
        p, r = prompts[i : i + batch_size], responses[i : i + batch_size]
        ids, attn, resp = pack_right_padded(p, r, pad_id)
        ent = lm_logprobs(model, ids.to(dev), attn.to(dev), resp.to(dev),
                          with_entropy=True)[1].cpu()  # (B, T)
        for b in range(len(p)):
            out.append(ent[b][resp[b].bool()].tolist())
    return out
