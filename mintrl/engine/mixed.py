"""MENTOR's mixed-policy sampling (arXiv 2510.04140; docs/design.md §1.3): student and teacher
decode in lockstep, each with its own KV cache, and every token is drawn from

    p' = p_s + α (p_T − p_s),   α = min(1, H_s / τ),

where H_s is the student's entropy at that position (temperature 1) and τ a high quantile of
recent on-policy entropies: where the student is sure it samples on its own, where it hesitates
the teacher takes over. Rows of a batch decode together and leave the batch when they finish.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from mintrl.engine.base import Sampling
from mintrl.engine.decoding import (
    cache_kwarg,
    draw_tokens,
    drop_finished,
    filter_logits,
    left_padded,
)
from mintrl.engine.kv_cache import growing_cache


def shared_vocab_check(policy_tokenizer, teacher_tokenizer, method: str) -> None:
    """Raise a clear error unless both tokenizers map the same strings to the same ids:
    distillation and mixed sampling compare the two models' distributions token by token."""
    a, b = policy_tokenizer.get_vocab(), teacher_tokenizer.get_vocab()
    if a == b:
        return
    only_a = sorted(set(a) - set(b))[:5]
    moved = sorted(t for t in set(a) & set(b) if a[t] != b[t])[:5]
    raise ValueError(
        f"{method} needs the teacher to share the policy's vocabulary, and they differ "
        f"(policy {len(a)} tokens, teacher {len(b)}; only in the policy: {only_a}; "
        f"different ids: {moved}). Use a teacher from the same model family.")


def mixing_weights(entropy: torch.Tensor, tau: float) -> torch.Tensor:
    """α = min(1, H / τ) per row; (b,) -> (b,)."""
    return (entropy / max(tau, 1e-8)).clamp(max=1.0)


def mix(student_logits: torch.Tensor, teacher_logits: torch.Tensor, alpha: torch.Tensor,
        sampling: Sampling) -> torch.Tensor:
    """The sampling distribution p' = (1 − α) p_s + α p_T, each side with the run's
    temperature / top-k / top-p applied; (b, V) logits, (b,) α -> (b, V) probabilities."""
    p_s = torch.softmax(filter_logits(student_logits, sampling), dim=-1)
    p_t = torch.softmax(filter_logits(teacher_logits, sampling), dim=-1)
    return p_s + alpha[:, None] * (p_t - p_s)


@dataclass
class MixedGeneration:
    """Per row: tokens (EOS included when produced), the raw mixture's log-prob of each token
    (log((1−α) p_s + α p_T) at temperature 1), α and whether the teacher is the likelier source
    of the token (α p_T(y) > (1−α) p_s(y): its provenance), and why it stopped."""

    token_ids: list[list[int]]
    logprobs: list[list[float]]
    alphas: list[list[float]]
    guided: list[list[int]]
    finish_reasons: list[str]


class MixedPolicySampler:
    """Batched sampling from the student/teacher mixture; both models share one vocabulary."""

    def __init__(self, student, teacher, eos_token_id: int, pad_token_id: int,
                 batch_size: int = 256):
        if student.config.vocab_size != teacher.config.vocab_size:
            raise ValueError(f"mixed-policy sampling needs one vocabulary: student "
                             f"{student.config.vocab_size} tokens, teacher "
                             f"{teacher.config.vocab_size}")
        self.student, self.teacher = student, teacher
        self.eos, self.pad, self.batch_size = eos_token_id, pad_token_id, batch_size

    def generate(self, prompts: list[list[int]], sampling: Sampling, tau: float
                 ) -> MixedGeneration:
        gen = torch.Generator(device="cpu").manual_seed(sampling.seed)
        out = MixedGeneration([], [], [], [], [])
        for i in range(0, len(prompts), self.batch_size):
            part = self._batch(prompts[i : i + self.batch_size], sampling, tau, gen)
            for field in ("token_ids", "logprobs", "alphas", "guided", "finish_reasons"):
                getattr(out, field).extend(getattr(part, field))
        return out

    @torch.inference_mode()
    def _batch(self, prompts, sampling: Sampling, tau: float, gen) -> MixedGeneration:
        n, dev = len(prompts), next(self.student.parameters()).device
        ids, mask = left_padded(prompts, self.pad)
        ids, mask = ids.to(dev), mask.to(dev)
        pos = (mask.cumsum(-1) - 1).clamp(min=0)
        models = (self.student, self.teacher)
        caches = [growing_cache(m.config, room=sampling.max_new_tokens) for m in models]
        logits = [m(input_ids=ids, attention_mask=mask, position_ids=pos, logits_to_keep=1,
                    **{cache_kwarg(m): c}).logits[:, -1, :].float()  # the last position's only
                  for m, c in zip(models, caches, strict=True)]
        out = MixedGeneration([[] for _ in range(n)], [[] for _ in range(n)],
                              [[] for _ in range(n)], [[] for _ in range(n)], ["length"] * n)
        alive = torch.arange(n)
        next_pos = pos[:, -1] + 1
        for step in range(sampling.max_new_tokens):
            raw_s = torch.log_softmax(logits[0], dim=-1)  # (b, V)
            raw_t = torch.log_softmax(logits[1], dim=-1)
            entropy = -(raw_s.exp() * raw_s).sum(-1)  # (b,)
            alpha = mixing_weights(entropy, tau)
            probs = mix(logits[0], logits[1], alpha, sampling)
            pick = draw_tokens(probs, gen)[:, None]  # (b, 1) on the models' device
            nxt = pick.squeeze(1).cpu()  # (b,)
            ps = raw_s.gather(-1, pick).squeeze(1).exp()  # (b,) raw p_s(y), p_T(y)
            pt = raw_t.gather(-1, pick).squeeze(1).exp()
            lp = torch.log((1 - alpha) * ps + alpha * pt).cpu()
            guided = (alpha * pt > (1 - alpha) * ps).cpu()
            done = nxt == self.eos
            for row, tok, logp, a, g, stop in zip(alive.tolist(), nxt.tolist(), lp.tolist(),
                                                  alpha.cpu().tolist(), guided.tolist(),
                                                  done.tolist(), strict=True):
                out.token_ids[row].append(tok)
                out.logprobs[row].append(logp)
                out.alphas[row].append(a)
                out.guided[row].append(int(g))
                if stop:
                    out.finish_reasons[row] = "stop"
            if step == sampling.max_new_tokens - 1:
                break
            left = drop_finished(done, caches, dev, alive, nxt, mask, next_pos)
            if left is None:
                break
            alive, nxt, mask, next_pos = left
            mask = torch.cat([mask, mask.new_ones((len(alive), 1))], dim=1)
            logits = [m(input_ids=nxt.to(dev)[:, None], attention_mask=mask,
                        position_ids=next_pos[:, None], **{cache_kwarg(m): c}
                        ).logits[:, -1, :].float()
                      for m, c in zip(models, caches, strict=True)]
            next_pos = next_pos + 1
        return out
