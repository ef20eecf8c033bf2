"""Issue 9's GPU figures in one run, side by side, on a Qwen3-shaped model with random weights.

    bash benchmarks/gpu_bench.sh              # one H100/H200: the Qwen3-1.7B shape, no downloads
    python benchmarks/gpu_bench.py --shape tiny --device cpu --seq 64 --micro 4 \\
        --score-len 64 --gen-batch 8 --gen-tokens 8 --out /tmp/bench   # the same code on CPU

Three parts, each on a fresh model, the GPU's peak memory reset between them:

- **train**: one optimizer step on ``--micro`` sequences of ``--seq`` tokens with the GRPO
  loss, through the project's own trainer (``mintrl.training.trainer.train_iteration`` on a
  DeepSpeed engine: ZeRO-2, bf16) and through a plain torch loop (fp32 weights, bf16 autocast, fused
  AdamW, the same loss and clipping), alternating, ``--steps`` timed steps each after one
  warm-up. With ``--liger`` both sides get liger-kernel's Qwen3 RMSNorm, SwiGLU and RoPE
  kernels (the same kernels on both sides). Reports tokens/s, the DeepSpeed/torch ratio and
  MFU = 6·N·tokens/s / 989 TFLOP/s (N with the tied embedding counted once; recomputation under
  gradient checkpointing is not counted).
- **score**: teacher-forced log-probs of ``--score-seqs`` sequences of ``--score-len`` tokens
  (``mintrl.training.logprobs.response_logprobs``, bf16, batch 16): the anchors', OPD's and the old
  policy's pass. Target: 90k tokens/s.
- **generate**: ``--gen-batch`` prompts, ``--gen-tokens`` new tokens each, with the
  transformers engine's dynamic cache and its static cache (compiled into a CUDA graph on
  GPUs, after a warm-up call that compiles it). Target: static at least 3x dynamic.

Writes ``<out>/gpu_bench.json`` and ``<out>/gpu_bench.md``.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
import traceback
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import transformers
from gpu_smoke import PEAK_FLOPS, SHAPES  # benchmarks/ is on sys.path when run as a script


def random_model(shape: dict, device: str, dtype=torch.float32):
    """A Qwen3 model of ``shape`` with random weights, built on ``device``."""
    from transformers import Qwen3Config, Qwen3ForCausalLM

    cfg = Qwen3Config(vocab_size=shape["vocab"], hidden_size=shape["hidden_size"],
                      intermediate_size=shape["intermediate_size"],
                      num_hidden_layers=shape["num_layers"],
                      num_attention_heads=shape["num_heads"],
                      num_key_value_heads=shape["num_kv_heads"], head_dim=shape["head_dim"],
                      max_position_embeddings=8192, tie_word_embeddings=True, rope_theta=1e6,
                      pad_token_id=0, eos_token_id=1, bos_token_id=None)
    torch.manual_seed(0)
    with torch.device(device):
        model = Qwen3ForCausalLM(cfg).to(dtype)
    return model


def n_params(model) -> int:
    return sum(p.numel() for p in model.parameters())  # a tied weight is yielded once


def rollouts(n: int, seq: int, vocab: int) -> pd.DataFrame:
    """``n`` rollouts of ``seq`` tokens (a prompt of 64 tokens, or half of a shorter sequence),
    two per problem with rewards 0 and 1, so every GRPO advantage is nonzero."""
    rng = np.random.default_rng(0)
    prompt = min(64, seq // 2)
    return pd.DataFrame({
        "problem_id": [f"p{i // 2}" for i in range(n)],
        "prompt_ids": [rng.integers(3, vocab, prompt).tolist() for _ in range(n)],
        "response_ids": [rng.integers(3, vocab, seq - prompt).tolist() for _ in range(n)],
        "reward": [float(i % 2) for i in range(n)],
    })


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def peak_gb(device: str) -> float | None:
    return torch.cuda.max_memory_allocated() / 2**30 if device.startswith("cuda") else None


def error_text(e: Exception) -> str:
    """An exception as the results record it (its traceback goes to the log)."""
    return f"{type(e).__name__}: {e}"[:2000]


def reset_peak(device: str) -> None:
    gc.collect()
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def bench_train(args, shape: dict, gpu: bool) -> dict:
    from mintrl.algo.objectives import grpo_loss
    from mintrl.algo.train_targets import group_advantages
    from mintrl.config import RunSpec
    from mintrl.training.batching import pack
    from mintrl.training.trainer import (
        deepspeed_engine,
        forward_logprobs,
        train_iteration,
    )

    spec = RunSpec(method="grpo", minibatch_size=args.micro, micro_batch_size=args.micro,
                   epochs=1, lr=1e-6, deepspeed={"zero_stage": 2 if gpu else 0, "bf16": gpu,
                                                 "gradient_checkpointing": args.grad_ckpt})
    df = rollouts(args.micro, args.seq, shape["vocab"])
    tokens = args.micro * args.seq
    out = {"sequences": args.micro, "seq_tokens": args.seq, "grad_ckpt": args.grad_ckpt}

    # the project's trainer: train_iteration times its optimisation as time/update
    reset_peak(args.device)
    model = random_model(shape, args.device)
    n = n_params(model)
    engine = deepspeed_engine(model, spec, args.device)
    ds_s = []
    for i in range(args.steps + 1):
        m = train_iteration(engine, df, spec, "grpo", pad_id=0, seed=i, device=args.device)
        ds_s.append(m["time/update"])
    out["deepspeed_peak_gb"] = peak_gb(args.device)
    if hasattr(engine, "destroy"):  # frees DeepSpeed's hooks and buffers before the next model
        engine.destroy()
    del engine, model
    reset_peak(args.device)

    # plain torch: the same loss on the same micro-batch
    model = random_model(shape, args.device)
    if args.grad_ckpt:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    opt = torch.optim.AdamW(model.parameters(), lr=1e-6, fused=gpu)
    mb = pack(df, np.arange(len(df)), 0)
    adv = group_advantages(df, spec, 0).to(args.device)
    loss_fn = grpo_loss
    autocast = torch.autocast("cuda" if gpu else "cpu", dtype=torch.bfloat16, enabled=gpu)
    torch_s = []
    for _ in range(args.steps + 1):
        with torch.no_grad(), autocast:
            old, _ = forward_logprobs(model, mb, args.device)
        sync(args.device)
        t0 = time.perf_counter()
        model.train()
        with autocast:
            lp, _ = forward_logprobs(model, mb, args.device)
            loss, _ = loss_fn(lp, old, adv, mb.response_mask.to(args.device))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), spec.max_grad_norm)
        opt.step()
        opt.zero_grad(set_to_none=True)
        sync(args.device)
        torch_s.append(time.perf_counter() - t0)
    out["torch_peak_gb"] = peak_gb(args.device)
    del model, opt
    reset_peak(args.device)

    ds, pt = float(np.median(ds_s[1:])), float(np.median(torch_s[1:]))
    out |= {"parameters": n, "deepspeed_step_s": ds, "torch_step_s": pt,
            "deepspeed_tokens_per_s": tokens / ds, "torch_tokens_per_s": tokens / pt,
            "deepspeed_vs_torch": pt / ds}
    if gpu:
        out |= {"deepspeed_mfu": 6 * n * tokens / ds / PEAK_FLOPS,
                "torch_mfu": 6 * n * tokens / pt / PEAK_FLOPS}
    return out


def bench_score(args, shape: dict, gpu: bool) -> dict:
    from mintrl.training.logprobs import response_logprobs

    reset_peak(args.device)
    model = random_model(shape, args.device, torch.bfloat16 if gpu else torch.float32).eval()
    df = rollouts(args.score_seqs, args.score_len, shape["vocab"])
    prompts, responses = df["prompt_ids"].tolist(), df["response_ids"].tolist()
    response_logprobs(model, prompts[:16], responses[:16], 0, batch_size=16)  # warm-up
    sync(args.device)
    t0 = time.perf_counter()
    response_logprobs(model, prompts, responses, 0, batch_size=16)
    sync(args.device)
    s = time.perf_counter() - t0
    out = {"sequences": args.score_seqs, "seq_tokens": args.score_len, "seconds": s,
           "tokens_per_s": args.score_seqs * args.score_len / s,
           "peak_gb": peak_gb(args.device)}
    del model
    return out


def bench_generate(args, shape: dict, gpu: bool) -> dict:
    from mintrl.engine import Sampling
    from mintrl.engine.transformers_engine import TransformersEngine

    reset_peak(args.device)
    model = random_model(shape, args.device, torch.bfloat16 if gpu else torch.float32).eval()
    rng = np.random.default_rng(1)
    prompts = [rng.integers(3, shape["vocab"], args.gen_prompt).tolist()
               for _ in range(args.gen_batch)]
    sampling = Sampling(max_new_tokens=args.gen_tokens, seed=0)
    out = {"batch": args.gen_batch, "prompt_tokens": args.gen_prompt,
           "new_tokens": args.gen_tokens}
    for cache in ("dynamic", "static"):
        try:  # a failed compile keeps the dynamic figure
            engine = TransformersEngine(model, 1, 0, batch_size=args.gen_batch, cache=cache)
            t0 = time.perf_counter()
            engine.generate(prompts, sampling)  # warm-up; compiles the static step on a GPU
            sync(args.device)
            warm = time.perf_counter() - t0
            t0 = time.perf_counter()
            gen = engine.generate(prompts, sampling)
            sync(args.device)
            s = time.perf_counter() - t0
        except Exception as e:  # noqa: BLE001 - reported in the results, not hidden
            traceback.print_exc()
            out[f"{cache}_error"] = error_text(e)
            continue
        n = sum(map(len, gen.token_ids))
        out |= {f"{cache}_s": s, f"{cache}_tokens": n, f"{cache}_tokens_per_s": n / s,
                f"{cache}_first_call_s": warm}
    if "static_tokens_per_s" in out and "dynamic_tokens_per_s" in out:
        out["static_vs_dynamic"] = out["static_tokens_per_s"] / out["dynamic_tokens_per_s"]
    if gpu:  # why a compiled step is slow, when it is: graph breaks, skipped CUDA graphs
        from torch._dynamo.utils import counters

        out["compile_counters"] = {k: dict(v) for k, v in counters.items() if v}
    try:  # after a CUDA fault in one cache this raises too: keep the other's figures
        out["peak_gb"] = peak_gb(args.device)
    except Exception as e:  # noqa: BLE001
        out["peak_gb_error"] = error_text(e)
    del model
    return out


def report(res: dict) -> str:
    t, s, g = res["train"], res["score"], res["generate"]
    mfu = (f"; MFU {t['deepspeed_mfu']:.1%} (DeepSpeed) and {t['torch_mfu']:.1%} (torch)"
           if "deepspeed_mfu" in t else "")
    return (
        f"{res['shape']} on {res['device_name']} ({t['parameters'] / 1e9:.2f} B parameters), "
        f"liger kernels: {res['liger']}, in {res['total_s']:.0f} s:\n"
        f"- train, {t['sequences']} x {t['seq_tokens']} tokens, gradient checkpointing "
        f"{t['grad_ckpt']}: DeepSpeed trainer {t['deepspeed_tokens_per_s']:,.0f} tokens/s, "
        f"plain torch {t['torch_tokens_per_s']:,.0f} tokens/s "
        f"({t['deepspeed_vs_torch']:.2f}x){mfu}\n"
        f"- score, {s['sequences']} x {s['seq_tokens']} tokens: "
        f"{s['tokens_per_s']:,.0f} tokens/s\n"
        f"- generate, batch {g['batch']}, {g['new_tokens']} new tokens: dynamic cache "
        f"{g['dynamic_tokens_per_s']:,.0f} tokens/s, static "
        f"{g['static_tokens_per_s']:,.0f} tokens/s ({g['static_vs_dynamic']:.2f}x; its first "
        f"call, compiling, {g['static_first_call_s']:.0f} s)\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shape", choices=sorted(SHAPES), default="qwen3-1.7b")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--out", type=Path, default=Path("results/benchmarks"))
    ap.add_argument("--seq", type=int, default=4096, help="train: tokens per sequence")
    ap.add_argument("--micro", type=int, default=8, help="train: sequences per step")
    ap.add_argument("--steps", type=int, default=3, help="train: timed steps per side")
    ap.add_argument("--grad-ckpt", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--liger", action="store_true",
                    help="liger-kernel's RMSNorm, SwiGLU and RoPE on both sides (GPU extra)")
    ap.add_argument("--score-seqs", type=int, default=64)
    ap.add_argument("--score-len", type=int, default=2048)
    ap.add_argument("--gen-batch", type=int, default=256)
    ap.add_argument("--gen-prompt", type=int, default=64)
    ap.add_argument("--gen-tokens", type=int, default=128)
    ap.add_argument("--parts", default="train,score,generate")
    args = ap.parse_args()
    gpu = args.device.startswith("cuda")
    if not gpu:
        torch.set_num_threads(1)  # the CPU twin: one thread, as the project's CPU jobs run
    if args.liger:
        from liger_kernel.transformers import apply_liger_kernel_to_qwen3

        # patches transformers' Qwen3 classes: every model built afterwards has the kernels
        apply_liger_kernel_to_qwen3(rope=True, rms_norm=True, swiglu=True, cross_entropy=False,
                                    fused_linear_cross_entropy=False)
    t0 = time.perf_counter()
    shape = SHAPES[args.shape]
    parts = {"train": bench_train, "score": bench_score, "generate": bench_generate}
    res = {"shape": args.shape, "device": args.device, "liger": args.liger,
           "device_name": torch.cuda.get_device_name() if gpu else "cpu",
           "torch": torch.__version__, "cuda": torch.version.cuda,
           "transformers": transformers.__version__}
    print("versions", json.dumps(res), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    wanted = args.parts.split(",")
    failed = []
    for name in wanted:
        t1 = time.perf_counter()
        try:  # one part's failure keeps the others' figures (a GPU session is short)
            res[name] = parts[name](args, shape, gpu)
        except Exception as e:  # noqa: BLE001 - reported, and the exit status says so
            traceback.print_exc()
            res[name] = {"error": error_text(e)}
            failed.append(name)
        if name == "generate" and "static_vs_dynamic" not in res[name] and name not in failed:
            failed.append("generate (one cache)")
        try:  # after the except block: the traceback no longer holds the part's model
            reset_peak(args.device)
        except Exception:  # noqa: BLE001 - after a CUDA fault; the next part will say
            traceback.print_exc()
        res[name]["wall_s"] = time.perf_counter() - t1
        print(name, json.dumps(res[name], default=str), flush=True)
        res["total_s"] = time.perf_counter() - t0
        (args.out / "gpu_bench.json").write_text(json.dumps(res, indent=1, default=str) + "\n")
    if not failed and all(k in res for k in parts):
        text = report(res)
        (args.out / "gpu_bench.md").write_text(text)
        print(text)
    if failed:
        sys.exit(f"gpu_bench: failed {failed}; the other parts are in "
                 f"{args.out / 'gpu_bench.json'}")


if __name__ == "__main__":
    main()
