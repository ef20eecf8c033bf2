"""The toy models' float32 matrix products on OpenBLAS's Haswell kernel, when the CPU pins are on.

With the pins (``mintrl.cpu_numerics``) torch's own products run MKL's ``COMPATIBLE`` branch, the
one MKL code path that rounds alike on Intel and AMD processors, but it is SSE2: a pinned
pre-training step spent 53 % of its time in ``aten::mm`` and 25 % in the attention kernel's
products, and the pinned main command took 1.7x the native one. numpy's OpenBLAS, told its
kernel by name (``OPENBLAS_CORETYPE=Haswell``, AVX2 and FMA), is as vendor-neutral (the same
digest on this Xeon and on emulated AMD EPYC-Milan and Intel Haswell processors) and 2.5x as fast
on the toy's products: ``benchmarks/gemm_paths.py`` and ``benchmarks/prototypes/openblas_gemm.py``,
results in ``benchmarks/results/``.

``route_products(model)`` sends every product of a Qwen3 toy model there: each ``nn.Linear``
(the projections, the MLP, the tied LM head) and attention's two products (``QK^T`` and ``PV``,
an attention function registered with transformers; softmax and masking stay ATen's, pinned).
Forward and backward: the gradient of ``a @ b`` is two more products, also OpenBLAS's. A tensor
that is not a float32 CPU tensor (a GPU policy, a bf16 teacher) takes torch's own path.
"""

from __future__ import annotations

import functools
import os

import numpy as np
import torch
from transformers import AttentionInterface, AttentionMaskInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import eager_mask
from transformers.models.qwen3.modeling_qwen3 import repeat_kv

from mintrl.cpu_numerics import OPENBLAS_KERNEL, OPT_OUT

ATTENTION = "openblas"  # the name the attention function is registered under


def products_pinned(environ=os.environ) -> bool:
    """Whether this process's products go to OpenBLAS: the pins are on and named its kernel."""
    return (environ.get(OPT_OUT, "pinned") != "native"
            and environ.get(OPENBLAS_KERNEL[0]) == OPENBLAS_KERNEL[1])


@functools.cache
def check_openblas() -> None:
    """Raise unless numpy's BLAS is OpenBLAS running the pinned kernel: numpy imported before
    ``mintrl`` (which sets the kernel), or a numpy built on MKL, would run other kernels.
    Checked at the first routed product, so a model that computes on a GPU never asks."""
    from threadpoolctl import threadpool_info

    blas = [i for i in threadpool_info() if i.get("user_api") == "blas"
            and "numpy" in i.get("filepath", "") + i.get("prefix", "")] or [
        i for i in threadpool_info() if i.get("user_api") == "blas"]
    core = next((str(i.get("architecture", "")) for i in blas
                 if i.get("internal_api") == "openblas"), None)
    if core is None or core.lower() != OPENBLAS_KERNEL[1].lower():
        found = core or ", ".join(i.get("internal_api", "?") for i in blas) or "none"
        raise RuntimeError(
            f"numpy's BLAS runs {found}, not OpenBLAS's {OPENBLAS_KERNEL[1]} kernel: import "
            f"mintrl before numpy (it sets {OPENBLAS_KERNEL[0]}), install numpy from "
            f"constraints/cpu.txt, or set {OPT_OUT}=native for this processor's own kernels")


def _blas_view(t: torch.Tensor) -> np.ndarray:
    """A numpy view OpenBLAS takes as it is (row-major, or a transposed matrix); else a copy,
    so that numpy never falls back to its own loop."""
    t = t.detach()
    if not (t.is_contiguous() or (t.dim() == 2 and t.t().is_contiguous())):
        t = t.contiguous()
    return t.numpy()


def _mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    check_openblas()
    return torch.from_numpy(np.matmul(_blas_view(a), _blas_view(b)))


class BlasMatmul(torch.autograd.Function):
    """``a @ b`` for float32 CPU tensors (..., m, k) @ (..., k, n) with equal batch shapes ->
    (..., m, n); the backward's products (grad @ b^T, a^T @ grad) are OpenBLAS's too."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return _mm(a, b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return _mm(grad, b.transpose(-1, -2)), _mm(a.transpose(-1, -2), grad)


def _routable(*ts: torch.Tensor) -> bool:
    return all(t.device.type == "cpu" and t.dtype == torch.float32 for t in ts)


class BlasLinear(torch.nn.Linear):
    """``nn.Linear`` whose product is OpenBLAS's: (..., in) -> (..., out). Set on a module by
    ``route_products`` (its class only: parameters, state dict and checkpoints are unchanged)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not _routable(x, self.weight):
            return super().forward(x)
        out = BlasMatmul.apply(x.reshape(-1, x.shape[-1]), self.weight.t())
        out = out.reshape(*x.shape[:-1], self.weight.shape[0])
        return out if self.bias is None else out + self.bias


def blas_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0,
                   **kwargs):
    """transformers' eager attention with both products on OpenBLAS. query (b, h, t, d), key and
    value (b, h_kv, s, d), attention_mask additive (b, 1, t, s) -> ((b, t, h, d), weights).

    A decode step (t = 1) takes torch's fused kernel (SDPA, pinned like every ATen kernel): its
    products are b * h separate vector-matrix products, which cost more in numpy's calls than
    they save (a generation took 1.6x as long with them routed, 0.83x with SDPA's)."""
    if not _routable(query, key, value) or query.shape[2] == 1 or (dropout and module.training):
        return sdpa_attention_forward(module, query, key, value, attention_mask,
                                      scaling=scaling, dropout=dropout, **kwargs)
    key = repeat_kv(key, module.num_key_value_groups)
    value = repeat_kv(value, module.num_key_value_groups)
    scores = BlasMatmul.apply(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        scores = scores + attention_mask[..., : key.shape[-2]]
    weights = torch.softmax(scores, dim=-1, dtype=torch.float32)
    out = BlasMatmul.apply(weights, value)
    return out.transpose(1, 2).contiguous(), weights


def _register_attention() -> None:
    AttentionInterface.register(ATTENTION, blas_attention)
    AttentionMaskInterface.register(ATTENTION, eager_mask)


def route_products(model: torch.nn.Module) -> torch.nn.Module:
    """Send ``model``'s products to OpenBLAS if ``products_pinned()``; returns ``model``."""
    if not products_pinned():
        return model
    _register_attention()
    for m in model.modules():
        if type(m) is torch.nn.Linear:
            m.__class__ = BlasLinear
    model.set_attn_implementation(ATTENTION)
    return model
