"""Do the toy's weights depend on the processor? Pre-training and one RL segment under each
setting of the CPU dispatchers, weights compared (mintrl.cpu_numerics).

    python benchmarks/cpu_numerics.py            # -> benchmarks/results/cpu_numerics.{json,md}

Each setting pre-trains the arith base (``--steps`` steps, 1 thread as the workflow's
pretrain rule, unless the setting says otherwise) and runs iteration 1 of ``grpo-s0``
(rollouts + update, 1 thread) from its own base; the chain is what a user's table depends on.
The rows: the pins (the default), the pins at 2 pre-training threads, the pins on
a processor whose MKL may use AVX2 at most (``MKL_ENABLE_INSTRUCTIONS``), the pins with the
models' products left on MKL's COMPATIBLE branch (as before ``mintrl.blas_products``), this
processor's own kernels (pins off), and the first pins, with MKL's AVX2 branch, which MKL
honours on Intel processors only (benchmarks/cpu_vendor.py shows the vendor part on emulated
processors). The pinned, MKL-products and native settings run ``--repeats`` times alternately,
so their time ratios are measured side by side.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
DISPATCHERS = ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS",
               "OPENBLAS_CORETYPE")
NATIVE = {"MINTRL_CPU_NUMERICS": "native"}
# name -> (environment, pre-training threads, what it stands for)
SETTINGS = {
    "pinned": ({}, 1, "the default: ATen and oneDNN at AVX2, MKL at its COMPATIBLE branch, "
               "the models' products on OpenBLAS's Haswell kernel (mintrl.cpu_numerics)"),
    "pinned-2-threads": ({}, 2, "the pins, pre-training at 2 threads, not the role's 1: what "
                         "the thread count changes (the workflow runs the role's count "
                         "whatever --cores grants)"),
    "pinned-mkl-avx2-cpu": ({"MKL_ENABLE_INSTRUCTIONS": "AVX2"}, 1, "the pins, MKL "
                            "dispatching as on an AVX2-only processor"),
    "pinned-mkl-products": ({"OPENBLAS_CORETYPE": ""}, 1, "the pins with the products on "
                            "MKL's COMPATIBLE branch, not OpenBLAS (the pins before "
                            "mintrl.blas_products)"),
    "native": (NATIVE, 1, "pins off: this processor's own kernels"),
    "avx2-branch": ({**NATIVE, "ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2",
                     "ONEDNN_MAX_CPU_ISA": "AVX2"}, 1, "the pins of before: MKL at its AVX2 "
                    "branch, which it takes on Intel processors only"),
}
TIMED = ("pinned", "pinned-mkl-products", "native")


def weights_digest(folder: Path) -> str:
    """sha256 over the checkpoint's safetensors files (the weights, bit for bit)."""
    h = hashlib.sha256()
    for f in sorted(folder.glob("*.safetensors")):
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def stage(args: list[str], env: dict[str, str], log: Path) -> float:
    """Runs ``python -m mintrl.<stage>`` in a clean copy of the environment plus ``env``."""
    full = {k: v for k, v in os.environ.items()
            if k not in (*DISPATCHERS, "MINTRL_CPU_NUMERICS")} | env
    t0 = time.perf_counter()
    with open(log, "w") as out:
        subprocess.run([sys.executable, "-m", *args], cwd=ROOT, env=full, stdout=out,
                       stderr=subprocess.STDOUT, check=True)
    return time.perf_counter() - t0


def write_config(work: Path, steps: int) -> Path:
    cfg = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    cfg["tasks"] = {"arith": cfg["tasks"]["arith"]}
    cfg["tasks"]["arith"]["base"]["steps"] = steps
    cfg["runs"] = [r for r in cfg["runs"] if r.get("name") == "grpo"]
    cfg.pop("tune", None)
    cfg["tuned"] = {"grpo": cfg["tuned"]["grpo"]}
    cfg["ablation_reference"] = None
    path = work / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def run_setting(name: str, env: dict[str, str], threads: int, cfg: Path, work: Path) -> dict:
    out = work / name
    out.mkdir(parents=True, exist_ok=True)
    data = work / "data"
    base = out / "base"
    t_pre = stage(["mintrl.pretrain", "--config", str(cfg), "--task", "arith", "--role",
                   "base", "--exclude", str(data), "--out", str(base), "--threads", str(threads)],
                  env, out / "pretrain.log")
    root = out / "grpo-s0"
    t_seg = stage(["mintrl.segment", "--config", str(cfg), "--run", "grpo-s0", "--task",
                   "arith", "--start", "1", "--end", "1", "--init", str(base), "--prompts",
                   str(data / "train.parquet"), "--root", str(root), "--threads", "1"],
                  env, out / "segment.log")
    rollouts = (root / "iter_1" / "rollouts.parquet").read_bytes()
    report = json.loads((out / "base.json").read_text())
    return {"pretrain_seconds": t_pre, "segment_seconds": t_seg,
            "base": weights_digest(base), "segment": weights_digest(root / "iter_1" / "model"),
            "rollouts": hashlib.sha256(rollouts).hexdigest()[:16],
            "final_loss": report["final_loss"]}


def markdown(results: dict, steps: int, repeats: int, command: str) -> str:
    first = {name: runs[0] for name, runs in results.items()}
    ref = first["pinned"]
    lines = [
        "# CPU numerics: do the toy's weights depend on the processor?", "",
        f"Command: `{command}` (this machine: {results_machine()}). Each setting pre-trains the "
        f"arith base for {steps} steps (1 thread unless it says otherwise) and runs iteration "
        "1 of `grpo-s0` from it (1 thread). Digests are sha256 of the safetensors files (and of "
        "the iteration's rollout file); `=` marks a digest equal to the pinned row's. On any "
        "x86-64 processor with AVX2 and FMA, the pinned row's digests should be these.", "",
        "| setting | what it is | base weights | after RL iteration 1 | rollouts | base loss |",
        "|---|---|---|---|---|---:|",
    ]
    for name, r in first.items():
        def mark(key, r=r, name=name):
            return f"`{r[key]}`" + (" =" if r[key] == ref[key] and name != "pinned" else "")
        lines.append(f"| {name} | {SETTINGS[name][2]} | {mark('base')} | {mark('segment')} | "
                     f"{mark('rollouts')} | {r['final_loss']:.6f} |")
    lines += ["", f"Time over {repeats} alternating repeats (pre-training / RL segment, "
              "seconds), and each setting against the pins:", "",
              "| setting | pre-training s | RL segment s | pre-training / pinned | "
              "RL segment / pinned |", "|---|---:|---:|---:|---:|"]
    for name in TIMED:
        runs, pins = results[name], results["pinned"]
        def ratios(key, runs=runs, pins=pins):
            return ", ".join(f"{r[key] / p[key]:.2f}" for r, p in zip(runs, pins, strict=True))
        pre = ", ".join(f"{r['pretrain_seconds']:.0f}" for r in runs)
        seg = ", ".join(f"{r['segment_seconds']:.1f}" for r in runs)
        lines.append(f"| {name} | {pre} | {seg} | {ratios('pretrain_seconds')} | "
                     f"{ratios('segment_seconds')} |")
    return "\n".join(lines + [""])


def results_machine() -> str:
    model = next((line.split(":", 1)[1].strip() for line in
                  Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), "unknown CPU")
    flags = Path("/proc/cpuinfo").read_text()
    return f"{model}, {'AVX-512' if 'avx512f' in flags else 'no AVX-512'}, {os.cpu_count()} cores"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=200, help="pre-training steps of the base")
    ap.add_argument("--repeats", type=int, default=2, help="alternating runs of the timed "
                    "settings, for their time ratios")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/cpu_numerics",
                    help="output stem: <out>.json and <out>.md")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="cpu_numerics_"))
    cfg = write_config(work, args.steps)
    stage(["mintrl.prepare", "--config", str(cfg), "--task", "arith", "--out",
           str(work / "data")], {}, work / "prepare.log")
    # untimed: a first segment may build DeepSpeed's CPU ops (a one-time JIT compile)
    run_setting("warm-up", *SETTINGS["pinned"][:2], cfg, work)
    results: dict[str, list[dict]] = {name: [] for name in SETTINGS}
    for k in range(args.repeats):
        for name in TIMED if k % 2 == 0 else TIMED[::-1]:
            results[name].append(run_setting(f"{name}-{k}", *SETTINGS[name][:2], cfg, work))
            print(name, results[name][-1], flush=True)
    for name, (env, threads, _) in SETTINGS.items():
        if not results[name]:
            results[name].append(run_setting(name, env, threads, cfg, work))
            print(name, results[name][-1], flush=True)
    command = "python benchmarks/cpu_numerics.py" + "".join(
        f" --{k} {v}" for k, v in (("steps", args.steps), ("repeats", args.repeats))
        if v != ap.get_default(k))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(
        {"command": command, "machine": results_machine(), "steps": args.steps,
         "settings": {n: {"env": SETTINGS[n][0], "pretrain_threads": SETTINGS[n][1],
                          "runs": r} for n, r in results.items()}},
        indent=2) + "\n")
    args.out.with_suffix(".md").write_text(markdown(results, args.steps, args.repeats, command))
    print(args.out.with_suffix(".md").read_text())


if __name__ == "__main__":
    main()
