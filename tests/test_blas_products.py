"""The toy models' products on OpenBLAS's named kernel when the CPU pins are on
(mintrl.blas_products): the same model, computed on a kernel that does not depend on the
processor, and a clear error where that kernel cannot be had."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from mintrl.blas_products import ATTENTION, BlasLinear, products_pinned
from mintrl.config import ModelArch
from mintrl.cpu_numerics import OPT_OUT, PINS
from mintrl.models import build_model

# two query heads per key-value head, as the toy's models (grouped-query attention)
ARCH = ModelArch(hidden_size=32, intermediate_size=64, num_layers=2, num_heads=4,
                 num_kv_heads=2, max_positions=64)

pinned = pytest.mark.skipif(not products_pinned(),
                            reason="the CPU pins are off here (native, or not x86 with AVX2)")


PINNED = "import mintrl; from mintrl.blas_products import products_pinned; print(products_pinned())"


def _fresh(code: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items()
             if k not in (*PINS, OPT_OUT, "OPENBLAS_NUM_THREADS")}
    return subprocess.run([sys.executable, "-c", code], env=clean | env, capture_output=True,
                          text=True)


@pinned
def test_a_pinned_model_computes_on_openblas_what_torch_computes(tokenizer, monkeypatch):
    """Every projection and attention runs on OpenBLAS, and the logits and the gradient are
    torch's own up to float32 rounding (masked rows of a left-padded batch aside)."""
    model = build_model(ARCH, tokenizer, seed=0)
    monkeypatch.setenv(OPT_OUT, "native")
    ref = build_model(ARCH, tokenizer, seed=0)
    layer = model.model.layers[0]
    assert type(layer.mlp.down_proj) is BlasLinear and type(model.lm_head) is BlasLinear
    assert model.config._attn_implementation == ATTENTION
    assert type(ref.lm_head) is torch.nn.Linear and ref.config._attn_implementation != ATTENTION
    ids = torch.randint(3, len(tokenizer), (3, 24))
    mask = torch.ones_like(ids)
    mask[0, :6] = 0  # left padding
    keep = mask.bool()
    logits = model(input_ids=ids, attention_mask=mask).logits[keep]
    expected = ref(input_ids=ids, attention_mask=mask).logits[keep]
    torch.testing.assert_close(logits, expected, rtol=1e-5, atol=1e-5)
    logits.logsumexp(-1).sum().backward()
    expected.logsumexp(-1).sum().backward()
    for (name, p), q in zip(model.named_parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-6, msg=name)
    assert model.state_dict().keys() == ref.state_dict().keys()  # checkpoints unchanged


def test_a_fresh_process_runs_openblas_on_the_named_kernel_and_one_thread():
    code = ("import mintrl, numpy, threadpoolctl; from mintrl.blas_products import "
            "products_pinned; i = [x for x in threadpoolctl.threadpool_info() "
            "if x['internal_api'] == 'openblas'][0]; "
            "import os; print(products_pinned(), i['architecture'], i['num_threads'], "
            "os.environ.get('OMP_WAIT_POLICY'))")
    res = _fresh(code)
    assert res.returncode == 0, res.stderr
    if res.stdout.split()[0] == "False":
        pytest.skip("the CPU pins are off on this processor")
    # one OpenBLAS thread unless a stage sets more; OpenMP workers that sleep, not spin
    assert res.stdout.split()[1:] == ["Haswell", "1", "PASSIVE"]
    assert _fresh(code, **{OPT_OUT: "native"}).stdout.split()[0] == "False"


def test_numpy_imported_before_mintrl_is_a_clear_error_not_other_kernels():
    probe = _fresh("import numpy, threadpoolctl; print([x['architecture'] for x in "
                   "threadpoolctl.threadpool_info() if x['internal_api'] == 'openblas'][0])")
    if probe.stdout.strip() == "Haswell":
        pytest.skip("OpenBLAS picks the Haswell kernel on this processor by itself")
    res = _fresh("import numpy; import mintrl, torch; from mintrl.models import build_model; "
                 "from mintrl.tokenizer import build_char_tokenizer; "
                 "from mintrl.config import ModelArch; m = build_model(ModelArch(hidden_size=32, "
                 "intermediate_size=64, num_layers=1, num_heads=2, num_kv_heads=1, "
                 "max_positions=64), build_char_tokenizer(), 0); "
                 "m(input_ids=torch.tensor([[5, 6, 7]]))")
    if _fresh(PINNED).stdout.strip() != "True":
        pytest.skip("the CPU pins are off on this processor")
    assert res.returncode != 0
    assert "OPENBLAS_CORETYPE" in res.stderr.strip().splitlines()[-1]
    assert "import mintrl before numpy" in res.stderr
