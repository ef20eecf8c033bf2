"""Does the toy's arithmetic depend on the processor's vendor? The toy's training step on this
processor and on emulated AMD and Intel processors, under each MKL branch.

    apt-get install qemu-user                  # the emulator (Debian's package)
    python benchmarks/cpu_vendor.py            # -> benchmarks/results/cpu_vendor.{json,md}

MKL picks its code by the processor's vendor as well as its instruction set, and the CPU
pins (``mintrl.cpu_numerics``) can only be checked against a vendor that one has. qemu-user
runs this same Python, torch and MKL on an emulated processor whose CPUID says AMD EPYC-Milan
or Intel Haswell (both AVX2 + FMA, no AVX-512), so MKL and ATen dispatch as they would there.
The probe is the arith base's first pre-training steps as ``mintrl.pretrain`` takes them
(model init, loss, every gradient, three AdamW steps, on batches of 16), and the log-softmax
and ``exp`` that rollouts and log-probs use; it prints a digest of each. With the pins the
model's products run on OpenBLAS's named Haswell kernel (``mintrl.blas_products``) under both
MKL branches: the branch decides what MKL still computes. It runs natively at 1
and 2 threads, and at 1 thread under emulation (two emulated threads on two cores ran over
25 minutes, OpenMP's spinning threads competing for the emulator).

Read the table by columns of one emulator: the emulated AMD and the emulated Intel processor
run the same instructions through the same emulator, so a digest that differs between them is
the vendor's doing. A digest that differs between an emulated processor and this real one can
also be the emulator's (it computes approximate instructions exactly, for one), so those
columns say how faithful the emulation is, not what another real processor computes.
About 5 minutes per emulated probe (importing transformers under emulation dominates).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import mintrl  # noqa: F401  first: it pins the CPU kernels before anything loads torch

ROOT = Path(__file__).resolve().parents[1]
BRANCHES = {"AVX2": "MKL's AVX2 branch (the first pins), for what MKL still computes",
            "COMPATIBLE": "MKL's COMPATIBLE branch (the pin now), for what MKL still computes"}
EMULATED = {"EPYC-Milan": "emulated AMD EPYC-Milan", "Haswell": "emulated Intel Haswell"}
STAGES = ["init", "loss", "grads", "adamw_1", "adamw_3", "log_softmax", "exp"]


def probe(steps: int = 3, batch: int = 16) -> dict[str, str]:
    """Digests of the toy's training step, run in this process (the pins already applied)."""
    import numpy as np
    import torch

    from mintrl.config import load_config
    from mintrl.models import build_model
    from mintrl.tasks import get_task
    from mintrl.tokenizer import build_char_tokenizer
    from mintrl.training.pretraining import pretrain_optimizer, sample_examples, train_step_loss

    def digest(*tensors) -> str:
        h = hashlib.sha256()
        for t in tensors:
            h.update(t.detach().contiguous().numpy().tobytes())
        return h.hexdigest()[:12]

    spec = load_config(ROOT / "config/config.yaml").tasks["arith"].base
    tok = build_char_tokenizer()
    model = build_model(spec.arch, tok, seed=7)
    model.train()
    params = list(model.parameters())
    out = {"init": digest(*params)}
    opt = pretrain_optimizer(params, spec)
    rng, task = np.random.default_rng(7), get_task("arith")
    for step in range(1, steps + 1):
        prompts, responses = sample_examples(task, spec, rng, batch, set())
        opt.zero_grad(set_to_none=True)
        loss = train_step_loss(model, tok, prompts, responses, spec.length_buckets)
        if step == 1:
            out["loss"], out["grads"] = float(loss).hex(), digest(*(p.grad for p in params))
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        if step in (1, steps):
            out[f"adamw_{step}"] = digest(*params)
    with torch.no_grad():
        ids = tok([prompts[0] + responses[0]], return_tensors="pt")["input_ids"]
        logits = model(input_ids=ids).logits.float()  # (1, T, V)
        out["log_softmax"] = digest(torch.log_softmax(logits, -1))
        out["exp"] = digest(torch.exp(logits))
    return out


def run_probe(branch: str, threads: int, cpu: str | None) -> dict[str, str]:
    """The probe in a fresh process: MKL at ``branch``, natively or emulating ``cpu``."""
    env = {k: v for k, v in os.environ.items() if k != "MKL_CBWR"} | {
        "MKL_CBWR": branch, "OMP_WAIT_POLICY": "PASSIVE"}
    cmd = [sys.executable, __file__, "--probe", "--threads", str(threads)]
    if cpu:
        cmd = ["qemu-x86_64", "-cpu", cpu, *cmd]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"probe {branch} {cpu or 'native'} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def machine() -> str:
    info = Path("/proc/cpuinfo").read_text()
    model = next((line.split(":", 1)[1].strip() for line in info.splitlines()
                  if line.startswith("model name")), "unknown CPU")
    return f"{model}, {'AVX-512' if 'avx512f' in info else 'no AVX-512'}, {os.cpu_count()} cores"


def markdown(results: dict, command: str) -> str:
    cols = ["native, 1 thread", "native, 2 threads", *EMULATED.values()]
    lines = ["# CPU numerics across vendors: the toy's training step on emulated processors", "",
             f"Command: `{command}` (this machine: {machine()}; qemu-user "
             f"{qemu_version()}). Digests of the arith base's first pre-training steps "
             "(init, loss, gradients, AdamW steps 1 and 3) and of the log-softmax and `exp` "
             "of its logits after the three steps; `=` marks a digest equal to the native "
             "1-thread one (emulated probes run 1 thread: that is their reference; the "
             "2-thread column shows what the thread count changes).", ""]
    for branch, what in BRANCHES.items():
        r = results[branch]
        lines += [f"## MKL_CBWR={branch}: {what}", "",
                  "| stage | " + " | ".join(cols) + " | AMD = Intel (emulated) |",
                  "|---|" + "---|" * (len(cols) + 1)]
        for stage in STAGES:
            ref = r[cols[0]][stage]
            cells = [f"`{r[c][stage]}`" + (" =" if r[c][stage] == ref and c != cols[0] else "")
                     for c in cols]
            same = "yes" if r[cols[2]][stage] == r[cols[3]][stage] else "**no**"
            lines.append(f"| {stage} | " + " | ".join(cells) + f" | {same} |")
        lines.append("")
    return "\n".join(lines)


def qemu_version() -> str:
    out = subprocess.run(["qemu-x86_64", "--version"], capture_output=True, text=True).stdout
    return out.split("\n")[0].split("version")[-1].strip()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--probe", action="store_true", help="run the probe here, print its JSON")
    ap.add_argument("--threads", type=int, default=2, help="torch threads of the probe")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/cpu_vendor",
                    help="output stem: <out>.json and <out>.md")
    args = ap.parse_args(argv)
    if args.probe:
        from mintrl.cpu_numerics import set_threads  # mintrl has pinned the kernels

        set_threads(args.threads)
        print(json.dumps(probe()))
        return
    if shutil.which("qemu-x86_64") is None:
        raise SystemExit("qemu-x86_64 not found: apt-get install qemu-user")
    jobs = {(b, col): (b, threads, cpu) for b in BRANCHES for col, threads, cpu in
            [("native, 2 threads", 2, None), ("native, 1 thread", 1, None),
             *((name, 1, cpu) for cpu, name in EMULATED.items())]}
    with ThreadPoolExecutor(max_workers=2) as pool:  # one emulated probe per core
        futures = {key: pool.submit(run_probe, *job) for key, job in jobs.items()}
        results: dict[str, dict] = {b: {} for b in BRANCHES}
        for (b, col), fut in futures.items():
            results[b][col] = fut.result()
            print(b, col, results[b][col], flush=True)
    command = "python benchmarks/cpu_vendor.py"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(
        {"command": command, "machine": machine(), "qemu": qemu_version(),
         "results": results}, indent=2) + "\n")
    args.out.with_suffix(".md").write_text(markdown(results, command))
    print(args.out.with_suffix(".md").read_text())


if __name__ == "__main__":
    main()
