"""Per-token log-probs of given responses under a causal LM (teacher forcing, fp32).

Used wherever a log-prob must be *recomputed* rather than recorded while sampling: old-policy
and anchor log-probs in training, a teacher's scores on a policy's tokens, diagnostics.
"""

from __future__ import annotations

import torch


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


def token_logprobs(logits: torch.Tensor, input_ids: torch.Tensor) -> torch.Tensor:
    """(B, T, V) logits, (B, T) ids -> (B, T) log p(id_t | ids_<t) in fp32; column 0 is 0."""
    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)  # (B, T-1, V)
    picked = logp.gather(-1, input_ids[:, 1:, None]).squeeze(-1)  # (B, T-1)
    return torch.nn.functional.pad(picked, (1, 0))


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
        logits = model(input_ids=ids.to(dev), attention_mask=attn.to(dev)).logits
        lp = token_logprobs(logits, ids.to(dev)).cpu()
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
        logp = torch.log_softmax(
            model(input_ids=ids.to(dev), attention_mask=attn.to(dev)).logits[:, :-1].float(), -1)
        ent = torch.nn.functional.pad(-(logp.exp() * logp).sum(-1), (1, 0)).cpu()  # (B, T)
        for b in range(len(p)):
            out.append(ent[b][resp[b].bool()].tolist())
    return out
