"""Wall time of scoring hostile generated programs (issue 8's target: the suite in <= 200 s on
the 2-core machine), and of a reward batch full of them, next to a batch of honest programs.

    python benchmarks/hostile.py      # -> results/benchmarks/hostile.{json,md}

Each program of tests/hostile_programs.py is scored alone (one after another), then all of them
again as one batch through the code task's reward (two sandbox runs at a time, as in a
rollout), then the same number of correct programs as a batch. Run as root to measure the
hardened sandbox (namespaces and a dropped uid); the report says which was measured.
"""

from __future__ import annotations

import socket
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from hostile_programs import TESTS, programs  # noqa: E402

from mintrl.io import write_json  # noqa: E402
from mintrl.rewards import score_program  # noqa: E402
from mintrl.sandbox import hardened  # noqa: E402
from mintrl.tasks import Problem, get_task  # noqa: E402

OUT = Path("results/benchmarks")


def main() -> None:
    canary = Path(tempfile.mkdtemp(prefix="mintrl-canary-"))
    canary.chmod(0o755)  # reachable by the sandbox's uid: only its permissions protect it
    (canary / "keep.txt").write_text("precious")
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    progs = programs(canary, srv.getsockname()[1])
    per = {}
    t0 = time.perf_counter()
    for name, src in progs.items():
        t = time.perf_counter()
        reward = score_program(src, TESTS).reward
        per[name] = {"reward": reward, "seconds": round(time.perf_counter() - t, 3)}
    alone = time.perf_counter() - t0

    code = get_task("code")
    problem = Problem("hostile", "code", 0, "f(x) = x + 1", "",
                      {"tests": {"format": "functional", "cases": TESTS.cases, "fn_name": "f",
                                 "timeout_s": TESTS.timeout_s}})
    t = time.perf_counter()
    batch_rewards = code.rewards([problem] * len(progs), list(progs.values()))
    batch = time.perf_counter() - t
    honest = [f"def f(x):\n    return x + 1  # variant {k}" for k in range(len(progs))]
    t = time.perf_counter()
    honest_rewards = code.rewards([problem] * len(honest), honest)
    honest_s = time.perf_counter() - t
    intact = (canary / "keep.txt").read_text() == "precious"
    report = {"hardened": hardened(), "programs": len(progs), "alone_s": round(alone, 1),
              "batch_s": round(batch, 1), "honest_batch_s": round(honest_s, 2),
              "max_reward": max(r["reward"] for r in per.values()),
              "batch_max_reward": max(batch_rewards), "honest_mean_reward":
              sum(honest_rewards) / len(honest_rewards), "canary_intact": intact,
              "per_program": per}
    write_json(OUT / "hostile.json", report)
    lines = [f"# Hostile programs ({len(progs)}), hardened sandbox: {hardened()}", "",
             f"- one after another: {alone:.1f} s (target <= 200 s); highest reward "
             f"{report['max_reward']}; canary intact: {intact}",
             f"- as one reward batch (2 at a time): {batch:.1f} s, highest reward "
             f"{report['batch_max_reward']}",
             f"- the same number of honest programs as a batch: {honest_s:.2f} s, mean reward "
             f"{report['honest_mean_reward']:.2f}", "", "| program | reward | seconds |",
             "|---|---:|---:|"]
    lines += [f"| {n} | {r['reward']} | {r['seconds']} |" for n, r in per.items()]
    (OUT / "hostile.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:6]))


if __name__ == "__main__":
    main()
