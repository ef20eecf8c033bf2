"""Prototype: the toy's pre-training step with every float32 matrix product on numpy's OpenBLAS,
its Haswell kernel named, instead of MKL's COMPATIBLE branch (the pins); time side by side, and
the weights' digest here and on emulated AMD and Intel processors.

    apt-get install qemu-user
    python benchmarks/prototypes/openblas_gemm.py          # -> stdout, JSON lines

Not the pipeline's code: it swaps, in one script, each ``nn.Linear``'s forward and the
attention's two products (a registered attention function: QK^T and PV, softmax by ATen) for
an autograd function whose forward and backward products are ``numpy.matmul`` on contiguous
float32 arrays (OpenBLAS's sgemm, one thread). Everything else (norms, rotary embedding, the
loss, AdamW) stays ATen's, at the pinned AVX2. Settings, each in a fresh process:

- ``mkl``: the model as the pipeline runs it (SDPA attention, MKL COMPATIBLE);
- ``mkl-eager``: the same with transformers' eager attention (its products MKL's too);
- ``openblas``: the swapped model;
- ``openblas-linear``: only the ``nn.Linear`` products swapped, attention SDPA's (MKL).

Each runs the intfn base's pre-training (``tasks.intfn.base``) for ``--steps`` steps after
``--warmup`` untimed ones, one thread, and prints seconds per step and the sha256 of the final
weights. ``--emulate`` also runs ``openblas`` for 3 steps under qemu-user's EPYC-Milan and
Haswell (and natively, the reference), which is the vendor check.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_CORETYPE", "Haswell")  # before numpy loads OpenBLAS
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import mintrl  # noqa: E402, F401  first: the CPU pins, before torch loads

# isort: split
import numpy as np  # noqa: E402
import torch  # noqa: E402

# the pipeline's own product since de545a3 (same digests as the prototype's contiguous copies)
from mintrl.blas_products import BlasMatmul  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def blas_linear(self, x: torch.Tensor) -> torch.Tensor:
    """nn.Linear without bias: (..., in) -> (..., out), the product on OpenBLAS."""
    flat = x.reshape(-1, x.shape[-1])
    out = BlasMatmul.apply(flat, self.weight.t())
    return out.reshape(*x.shape[:-1], self.weight.shape[0])


def blas_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0,
                   **kwargs):
    """Eager attention (q, k, v: (b, heads, t, d)) with both products on OpenBLAS."""
    from transformers.models.qwen3.modeling_qwen3 import repeat_kv

    key = repeat_kv(key, module.num_key_value_groups)
    value = repeat_kv(value, module.num_key_value_groups)
    scores = BlasMatmul.apply(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        scores = scores + attention_mask
    weights = torch.softmax(scores, dim=-1, dtype=torch.float32)
    out = BlasMatmul.apply(weights, value)
    return out.transpose(1, 2).contiguous(), weights


def build(setting: str, task: str):
    from transformers import AttentionInterface, AttentionMaskInterface
    from transformers.masking_utils import eager_mask

    from mintrl.config import load_config
    from mintrl.models import build_model
    from mintrl.tasks import get_task
    from mintrl.tokenizer import build_char_tokenizer

    cfg = load_config(ROOT / "config/config.yaml")
    spec = cfg.tasks[task].base
    tok = build_char_tokenizer()
    # torch's own products (the pins stay as imported): the prototype swaps them itself, as it
    # did before the pipeline routed them (mintrl.blas_products)
    os.environ["MINTRL_CPU_NUMERICS"] = "native"
    model = build_model(spec.arch, tok, cfg.seed + spec.seed)
    if setting == "mkl-eager":
        model.set_attn_implementation("eager")
    if setting in ("openblas", "openblas-linear"):
        for m in model.modules():
            if isinstance(m, torch.nn.Linear):
                m.forward = blas_linear.__get__(m)
    if setting == "openblas":
        AttentionInterface.register("blas", blas_attention)
        AttentionMaskInterface.register("blas", eager_mask)
        model.set_attn_implementation("blas")
    return model, tok, spec, get_task(task), cfg.tasks[task].facts.table()


def run(setting: str, task: str, steps: int, warmup: int, batch: int | None) -> dict:
    from mintrl.training.pretraining import pretrain_optimizer, sample_examples, train_step_loss

    torch.set_num_threads(1)
    model, tok, spec, tsk, facts = build(setting, task)
    if batch:
        spec = spec.model_copy(update={"batch_size": batch})
    model.train()
    opt = pretrain_optimizer(model.parameters(), spec)
    rng = np.random.default_rng(0)
    times, losses = [], []
    for i in range(warmup + steps):
        prompts, responses = sample_examples(tsk, spec, rng, spec.batch_size, set(), facts)
        t = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        losses.append(train_step_loss(model, tok, prompts, responses, spec.length_buckets))
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if i >= warmup:
            times.append(time.perf_counter() - t)
    h = hashlib.sha256()
    for _, p in sorted(model.state_dict().items()):
        h.update(p.detach().contiguous().numpy().tobytes())
    return {"setting": setting, "s_per_step": float(np.median(times)) if times else None,
            "loss": losses[-1], "digest": h.hexdigest()[:16]}


def child(setting: str, task: str, steps: int, warmup: int, batch: int | None,
          cpu: str | None = None) -> dict:
    cmd = [sys.executable, __file__, "--child", setting, "--task", task, "--steps", str(steps),
           "--warmup", str(warmup)] + (["--batch", str(batch)] if batch else [])
    if cpu:
        cmd = ["qemu-x86_64", "-cpu", cpu, *cmd]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--child")
    ap.add_argument("--task", default="intfn")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--batch", type=int)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--emulate", action="store_true")
    args = ap.parse_args()
    if args.child:
        print(json.dumps(run(args.child, args.task, args.steps, args.warmup, args.batch)))
        return
    for _ in range(args.repeats):  # alternating, so that the ratios are side by side
        for setting in ("mkl", "mkl-eager", "openblas", "openblas-linear"):
            print(json.dumps(child(setting, args.task, args.steps, args.warmup, None)),
                  flush=True)
    if args.emulate:
        print(json.dumps({"native": child("openblas", args.task, 3, 0, 16)}), flush=True)
        for cpu in ("EPYC-Milan", "Haswell"):
            print(json.dumps({cpu: child("openblas", args.task, 3, 0, 16, cpu)}), flush=True)


if __name__ == "__main__":
    main()
