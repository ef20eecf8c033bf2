"""Pre-training steps at 1 and 2 threads with the products on OpenBLAS: why the pins make torch's
OpenMP workers sleep (``OMP_WAIT_POLICY=PASSIVE``, mintrl.cpu_numerics).

    python benchmarks/thread_wait.py       # -> stdout, one line per setting

Each setting runs in a fresh process (the variable is read when OpenMP starts): the arith base's
model, 6 pre-training steps at its batch size; seconds per step, the first one included.
"""

from __future__ import annotations

import os
import subprocess
import sys

STEP = """
import mintrl, sys, time, numpy as np
from mintrl.cpu_numerics import set_threads
from mintrl.config import load_config
from mintrl.models import build_model
from mintrl.tasks import get_task
from mintrl.tokenizer import build_char_tokenizer
from mintrl.training.pretraining import pretrain_optimizer, sample_examples, train_step_loss
set_threads(int(sys.argv[1]))
cfg = load_config("config/config.yaml"); spec = cfg.tasks["arith"].base
tok = build_char_tokenizer(); m = build_model(spec.arch, tok, 0); m.train()
opt = pretrain_optimizer(m.parameters(), spec); rng = np.random.default_rng(0)
facts, task, ts = cfg.tasks["arith"].facts.table(), get_task("arith"), []
for _ in range(6):
    p, r = sample_examples(task, spec, rng, spec.batch_size, set(), facts)
    t = time.perf_counter(); opt.zero_grad()
    train_step_loss(m, tok, p, r, spec.length_buckets); opt.step()
    ts.append(time.perf_counter() - t)
print(" ".join(f"{x:.2f}" for x in ts))
"""


def main() -> None:
    for threads, policy in (("1", "PASSIVE"), ("2", "ACTIVE"), ("2", "PASSIVE")):
        env = {**os.environ, "OMP_WAIT_POLICY": policy}
        out = subprocess.run([sys.executable, "-c", STEP, threads], env=env, check=True,
                             capture_output=True, text=True).stdout.strip()
        print(f"threads {threads}, OMP_WAIT_POLICY={policy}: s per step {out}", flush=True)


if __name__ == "__main__":
    main()
