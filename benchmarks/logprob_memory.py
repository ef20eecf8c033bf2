"""Memory of the trainer's log-prob pass over a 151,936-token vocabulary: full logits against
``mintrl.training.logprobs.lm_logprobs`` (LM head at response positions, chunked, recomputed
backward).

    python benchmarks/logprob_memory.py     # -> results/benchmarks/logprob_memory.{json,md}

A Qwen3-shaped model with Qwen3's vocabulary and a small body (width 256, 2 layers), random
weights, on CPU; ``--batch`` sequences of ``--seq`` tokens, the last ``--response`` of them
the response. Each variant runs in its own process (peak resident memory is per process): one
forward and backward of the summed response log-probs, after a warm-up step. Reports the peak
resident memory above the process's state before the first step, and the step's time. On a
GPU the same arithmetic applies to the logits at 8 x 4096 tokens: 10 GB in bf16 and 20 GB for
their fp32 log-softmax that the full-logits pass keeps for the backward pass.
"""

from __future__ import annotations

# mintrl before torch: it pins the CPU kernels every stage runs (mintrl.cpu_numerics)
import mintrl  # noqa: F401

# isort: split
import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

OUT = Path("results/benchmarks")


def step(variant: str, batch: int, seq: int, response: int) -> dict:
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    from mintrl.training.logprobs import lm_logprobs

    torch.set_num_threads(1)
    torch.manual_seed(0)
    cfg = Qwen3Config(vocab_size=151936, hidden_size=256, intermediate_size=512,
                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                      head_dim=64, tie_word_embeddings=True, max_position_embeddings=seq)
    model = Qwen3ForCausalLM(cfg).train()
    ids = torch.randint(3, cfg.vocab_size, (batch, seq))
    attn = torch.ones_like(ids)
    resp = torch.zeros_like(ids)
    resp[:, seq - response :] = 1

    def once() -> float:
        t0 = time.perf_counter()
        if variant == "full":
            logits = model(input_ids=ids, attention_mask=attn, use_cache=False).logits
            logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
            lp = torch.nn.functional.pad(logp.gather(-1, ids[:, 1:, None]).squeeze(-1),
                                         (1, 0)) * resp
        else:
            lp, _ = lm_logprobs(model, ids, attn, resp)
        lp.sum().backward()
        model.zero_grad(set_to_none=True)
        return time.perf_counter() - t0

    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    warm = once()
    seconds = once()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"variant": variant, "peak_above_start_gb": (peak - base) / 2**20,
            "step_s": seconds, "warm_up_s": warm}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--response", type=int, default=768)
    ap.add_argument("--variant", choices=["full", "chunked"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.variant:  # the child process
        print(json.dumps(step(args.variant, args.batch, args.seq, args.response)))
        return
    rows = []
    for variant in ("full", "chunked"):
        res = subprocess.run([sys.executable, __file__, "--variant", variant, "--batch",
                              str(args.batch), "--seq", str(args.seq), "--response",
                              str(args.response)], capture_output=True, text=True, check=True)
        rows.append(json.loads(res.stdout.strip().splitlines()[-1]))
    full, chunked = rows
    report = {"batch": args.batch, "seq": args.seq, "response": args.response,
              "vocab": 151936, "rows": rows,
              "memory_ratio": chunked["peak_above_start_gb"] / full["peak_above_start_gb"],
              "time_ratio": chunked["step_s"] / full["step_s"]}
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "logprob_memory.json").write_text(json.dumps(report, indent=1) + "\n")
    text = (f"log-prob pass, {args.batch} x {args.seq} tokens ({args.response} response), "
            f"151,936-token vocabulary, forward + backward, one thread:\n"
            f"- full logits: {full['peak_above_start_gb']:.2f} GB peak above start, "
            f"{full['step_s']:.2f} s\n"
            f"- lm_logprobs (chunked head at response positions): "
            f"{chunked['peak_above_start_gb']:.2f} GB, {chunked['step_s']:.2f} s "
            f"({report['memory_ratio']:.2f}x the memory, {report['time_ratio']:.2f}x the time)\n")
    (OUT / "logprob_memory.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
