"""CPU numerics that do not depend on the processor: one kernel family for every x86 CPU.

torch's CPU build picks its kernels by the processor it runs on, in three places: ATen's
vectorised kernels (``ATEN_CPU_CAPABILITY``: AVX-512 where the CPU has it, else AVX2), MKL's
BLAS and vector maths (``MKL_CBWR``: a code path per instruction set, and per vendor) and
oneDNN's primitives (``ONEDNN_MAX_CPU_ISA``); numpy's OpenBLAS picks its kernel the same way
(``OPENBLAS_CORETYPE``). Each path rounds differently, and an RL pipeline amplifies a last-bit
difference into other samples, other updates and another table: the same code and versions
gave a teacher 8 pp apart on two processors. ``pin_cpu_numerics`` fixes all four: ATen and
oneDNN at AVX2, which every x86-64 processor of the last decade has; MKL at its ``COMPATIBLE``
branch (SSE2 without the approximate ``rcpps``/``rsqrtps``), the one branch MKL runs alike on
Intel and on AMD (its ``AVX2`` branch is honoured on Intel processors only, elsewhere MKL takes
its automatic branch: an AMD EPYC and an Intel Xeon pinned to it pre-trained different
weights); OpenBLAS at its ``Haswell`` kernel (AVX2 and FMA), named rather than detected. MKL's
``COMPATIBLE`` branch is slow, so the toy models' matrix products, most of the pipeline's time,
run on that OpenBLAS kernel instead: as vendor-neutral and 2.5x as fast
(``mintrl.blas_products``). Measured: ``benchmarks/cpu_vendor.py`` (emulated AMD and Intel
processors), ``benchmarks/cpu_numerics.py`` (this processor's own kernels against the pins,
and what the pins cost) and ``benchmarks/gemm_paths.py``, results in ``benchmarks/results/``.

The thread count changes float sums too (a GEMM split over threads: OpenBLAS's sums differ
between one and two threads, measured), so thread counts are fixed by the workflow, not by the
machine: pre-training runs ``tasks.<task>.<role>.threads`` whatever ``--cores`` grants, every
other job of the embedded default one thread, each stage through ``set_threads`` (torch's and
OpenBLAS's), and OpenBLAS starts at one thread, not at the machine's core count. torch's
OpenMP workers sleep between parallel regions (``OMP_WAIT_POLICY=PASSIVE``): spinning, they
took the cores OpenBLAS's threads needed.

It must run before torch and numpy are imported (each dispatcher reads its variable once), so
the package ``mintrl/__init__.py`` calls it: every stage is ``python -m mintrl.<stage>`` and
imports the package first. A variable already set in the environment wins (a cluster's own
``MKL_CBWR`` stays), and ``MINTRL_CPU_NUMERICS=native`` leaves them all alone (and the products
on torch's own path). Nothing is set on a processor without AVX2 and FMA, nor off x86 (ARM
laptops run other kernels: their numbers are not bit-equal to x86's whatever is pinned).
"""

from __future__ import annotations

import os
import platform
from collections.abc import MutableMapping
from pathlib import Path

# Values as each library spells them. MKL's branch is the vendor-neutral one, not AVX2: MKL
# honours its AVX2 branch on Intel processors only (see the module docstring). OpenBLAS's kernel
# is named, not detected: the toy models' products run there (mintrl.blas_products).
OPENBLAS_KERNEL = ("OPENBLAS_CORETYPE", "Haswell")
PINS = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "COMPATIBLE", "ONEDNN_MAX_CPU_ISA": "AVX2",
        OPENBLAS_KERNEL[0]: OPENBLAS_KERNEL[1]}
OPT_OUT = "MINTRL_CPU_NUMERICS"  # "native": the processor's own kernels


def has_avx2_fma(cpuinfo: str | None = None) -> bool:
    """Whether this is an x86-64 processor with AVX2 and FMA (``/proc/cpuinfo``'s flags)."""
    if platform.machine().lower() not in {"x86_64", "amd64"}:
        return False
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:  # not Linux: no flags to read, leave the dispatchers alone
            return False
    flags = next((line.split(":", 1)[1].split() for line in cpuinfo.splitlines()
                  if line.startswith("flags")), [])
    return "avx2" in flags and "fma" in flags


def pin_cpu_numerics(environ: MutableMapping[str, str] = os.environ,
                     supported: bool | None = None) -> dict[str, str]:
    """Set the dispatchers of ``PINS`` that ``environ`` leaves unset; returns what it set.

    ``supported`` (default: ``has_avx2_fma()``) says whether the processor runs the pinned
    kernels; an ``OPT_OUT`` of ``native`` sets nothing."""
    if environ.get(OPT_OUT, "pinned") == "native":
        return {}
    if not (has_avx2_fma() if supported is None else supported):
        return {}
    applied = {k: v for k, v in PINS.items() if k not in environ}
    environ.update(applied)
    environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # not the core count: see set_threads
    # torch's OpenMP workers spin between parallel regions, on the cores OpenBLAS's threads need
    # for the products: two threads each made a pre-training step 12x slower, sleeping workers
    # 0.85x one thread's time (benchmarks/thread_wait.py)
    environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    return applied


def set_threads(n: int) -> None:
    """Run torch's kernels and numpy's OpenBLAS (the pinned products) on ``n`` threads: a
    stage's thread count comes from the config, so its sums do not depend on the machine."""
    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(n)
    threadpool_limits(n, user_api="blas")


def kernels(environ: MutableMapping[str, str] = os.environ) -> str:
    """The CPU kernels a stage started with ``environ`` runs, in one string (the workflow's jobs
    carry it as a param, so that outputs computed with other kernels are made again)."""
    if environ.get(OPT_OUT, "pinned") == "native":
        return "native"
    return ",".join(f"{k}={environ.get(k, 'native')}" for k in PINS)
