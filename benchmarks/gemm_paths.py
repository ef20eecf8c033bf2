"""Which float32 GEMM could pinned CPU numerics run at? The toy's matrix products on each
path, timed side by side at one thread, with their digests natively and on emulated AMD and
Intel processors.

    apt-get install qemu-user          # the emulator, as for benchmarks/cpu_vendor.py
    python benchmarks/gemm_paths.py    # -> benchmarks/results/gemm_paths.md

The pins (``mintrl.cpu_numerics``) hold MKL at its COMPATIBLE branch: MKL's documentation
supports only its AUTO and COMPATIBLE branches on processors not made by Intel, and
COMPATIBLE is SSE2. The toy's stages spend most of their time in matrix products (a pinned
pre-training step: ``aten::mm`` and the attention kernel's products about three quarters of
it), so the branch sets the main command's time. The paths: MKL at COMPATIBLE (the pins),
at AVX2 (honoured on Intel only), its own choice (pins off), and numpy's OpenBLAS with its
kernel named, not detected (``OPENBLAS_CORETYPE=Haswell``: AVX2 and FMA, whatever the vendor).
A path that gives the same digest on the emulated AMD EPYC-Milan and Intel Haswell runs the
same arithmetic on both vendors (``benchmarks/cpu_vendor.py`` says what the emulation can and
cannot show); the native column is this processor's.

The shapes are one layer's products of the arith toy (hidden 128, MLP 256, 4 query and 2
key/value heads of 32, vocabulary 99) on a training micro-batch (2048 token rows) and on a
decoding step of 512 sequences: y = x W^T, float32, the same random inputs on every path.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from mintrl.cpu_numerics import OPT_OUT, PINS

ROOT = Path(__file__).resolve().parents[1]
# (in, out) of q, k, v, o, gate, up, down, lm_head
LAYERS = [(128, 128), (128, 64), (128, 64), (128, 128), (128, 256), (128, 256), (256, 128),
          (128, 99)]
ROWS = (2048, 512)
PATHS = {  # name -> (library, environment, what it is)
    "mkl-compatible": ("torch", {}, "MKL's COMPATIBLE branch (SSE2): the pins, alike on "
                       "every vendor"),  # mintrl applies its PINS
    "mkl-avx2": ("torch", {"MKL_CBWR": "AVX2", "ATEN_CPU_CAPABILITY": "avx2"},
                 "MKL's AVX2 branch: honoured on Intel processors only"),
    "mkl-native": ("torch", {"MINTRL_CPU_NUMERICS": "native"}, "MKL's own choice (pins off)"),
    "openblas-haswell": ("numpy", {"OPENBLAS_CORETYPE": "Haswell"},
                         "numpy's OpenBLAS, its Haswell kernel named (AVX2 + FMA)"),
}
EMULATED = {"EPYC-Milan": "emulated AMD EPYC-Milan", "Haswell": "emulated Intel Haswell"}

PROBE = r"""
import hashlib, json, sys, time
import numpy as np
lib, repeats = sys.argv[1], int(sys.argv[4])
layers, rows = json.loads(sys.argv[2]), json.loads(sys.argv[3])
rng = np.random.default_rng(0)
pairs = [(rng.standard_normal((m, k), dtype=np.float32),
          rng.standard_normal((n, k), dtype=np.float32)) for m in rows for k, n in layers]
if lib == "torch":
    import mintrl, torch  # mintrl first: it applies (or, told so, skips) the pins
    torch.set_num_threads(1)
    pairs = [(torch.from_numpy(x), torch.from_numpy(w)) for x, w in pairs]
    product = lambda x, w: torch.nn.functional.linear(x, w).numpy()
else:
    product = lambda x, w: x @ w.T
h = hashlib.sha256()
for x, w in pairs:
    h.update(np.ascontiguousarray(product(x, w)).tobytes())
times = []
for _ in range(repeats):
    t = time.perf_counter()
    for _ in range(10):
        for x, w in pairs:
            product(x, w)
    times.append((time.perf_counter() - t) / 10 * 1e3)
print(json.dumps({"digest": h.hexdigest()[:16], "ms": times}))
"""


def probe(path: str, repeats: int, cpu: str | None = None) -> dict:
    """One path's digest and times (ms per pass over every product), in a fresh process."""
    lib, env, _ = PATHS[path]
    full = {k: v for k, v in os.environ.items()
            if k not in (*PINS, OPT_OUT, "OPENBLAS_CORETYPE")}
    full |= env | {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-c", PROBE, lib, json.dumps(LAYERS), json.dumps(ROWS), str(repeats)]
    if cpu:
        cmd = ["qemu-x86_64", "-cpu", cpu, *cmd]
    out = subprocess.run(cmd, env=full, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def markdown(native: dict, emulated: dict, command: str, machine: str) -> str:
    base = statistics.median(native["mkl-compatible"]["ms"])
    lines = [
        "# Which float32 GEMM could pinned CPU numerics run at?", "",
        f"Command: `{command}` (this machine: {machine}; one thread). The toy's products "
        f"(one layer's and the LM head's, y = x W^T, {ROWS[0]} and {ROWS[1]} rows): time per "
        "pass over all of them, the median of alternating repeats, and the sha256 of the "
        "outputs, here and on emulated processors (qemu-user, where the path was run there).",
        "", "| path | what it is | ms per pass (median) | / the pins | digest here | "
        + " | ".join(EMULATED.values()) + " |",
        "|---|---|---:|---:|---|" + "---|" * len(EMULATED)]
    for name, (_, _, what) in PATHS.items():
        ms = statistics.median(native[name]["ms"])
        emu = [emulated.get(name, {}).get(cpu, "–") for cpu in EMULATED]
        lines.append(f"| {name} | {what} | {ms:.2f} | {ms / base:.2f} | "
                     f"`{native[name]['digest']}` | " + " | ".join(
                         f"`{d}`" if d != "–" else d for d in emu) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--emulate", nargs="*", default=["openblas-haswell", "mkl-compatible"],
                    help="paths also run under each emulated processor (none: skip)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/gemm_paths.md")
    args = ap.parse_args()
    native = {name: {"digest": None, "ms": []} for name in PATHS}
    for _ in range(args.repeats):  # alternate the paths, so that their ratios are side by side
        for name in PATHS:
            got = probe(name, 1)
            native[name]["digest"] = got["digest"]
            native[name]["ms"] += got["ms"]
            print(name, got, flush=True)
    emulated: dict[str, dict[str, str]] = {}
    if args.emulate and shutil.which("qemu-x86_64") is None:
        raise SystemExit("qemu-x86_64 not found: apt-get install qemu-user (or --emulate)")
    for name in args.emulate:
        for cpu in EMULATED:
            # digest only: emulated vector arithmetic is too slow to time
            emulated.setdefault(name, {})[cpu] = probe(name, 0, cpu)["digest"]
            print(name, cpu, emulated[name][cpu], flush=True)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from cpu_vendor import machine

    command = " ".join(["python benchmarks/gemm_paths.py", *sys.argv[1:]])
    text = markdown(native, emulated, command, machine())
    args.out.write_text(text)
    args.out.with_suffix(".json").write_text(json.dumps(
        {"command": command, "native": native, "emulated": emulated}, indent=1))
    print(text)


if __name__ == "__main__":
    main()
