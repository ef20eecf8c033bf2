"""Wall time of scoring hostile generated programs (issue 8's target: the suite in <= 200 s on
the 2-core machine), whether any of them scores, and the cost of an honest program.

    python benchmarks/hostile.py      # -> results/benchmarks/hostile.{json,md}

Scored: each program of tests/hostile_programs.py alone (one after another), then all of them
again as one batch through the code task's reward (two sandbox runs at a time, as in a
rollout); the access probes (each answers right exactly when a forbidden read succeeds) and
the equality tricks against every test format. Then 200 distinct honest programs as one batch,
in this machine's isolation mode and, side by side in the same run, unisolated (``plain``:
the same process limits, no namespaces, no view), for the cost of the isolation. Run as root
to measure the hardened sandbox; the report says which mode was measured.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from hostile_programs import (  # noqa: E402
    ALLOWED_TOP,
    TESTS,
    answer_keys_in,
    probe_program,
    probes,
    programs,
    trick_tests,
    tricks,
)

import mintrl.sandbox.runner as runner  # noqa: E402
from mintrl.io import write_json  # noqa: E402
from mintrl.rewards import score_program  # noqa: E402
from mintrl.tasks import Problem, get_task  # noqa: E402

OUT = Path("results/benchmarks")
HONEST = 200


def _problem() -> Problem:
    return Problem("hostile", "code", 0, "f(x) = x + 1", "",
                   {"tests": {"format": "functional", "cases": TESTS.cases, "fn_name": "f",
                              "timeout_s": TESTS.timeout_s}})


def _honest_batch() -> tuple[float, float]:
    """(seconds, mean reward) of HONEST distinct correct programs as one reward batch."""
    honest = [f"def f(x):\n    return x + 1  # variant {k}" for k in range(HONEST)]
    t = time.perf_counter()
    rewards = get_task("code").rewards([_problem()] * HONEST, honest)
    return time.perf_counter() - t, sum(rewards) / len(rewards)


def _score(named: dict[str, tuple[str, object]]) -> dict[str, dict]:
    per = {}
    for name, (src, tests) in named.items():
        t = time.perf_counter()
        reward = score_program(src, tests).reward
        per[name] = {"reward": reward, "seconds": round(time.perf_counter() - t, 3)}
    return per


def main() -> None:
    mode = runner.isolation()
    canary = Path(tempfile.mkdtemp(prefix="mintrl-canary-"))
    canary.chmod(0o755)  # reachable by the sandbox's uid: only its permissions protect it
    (canary / "keep.txt").write_text("precious")
    keys_dir = Path(tempfile.mkdtemp(prefix="mintrl-keys-", dir="/var/tmp"))
    keys = answer_keys_in(keys_dir)
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    progs = programs(canary, srv.getsockname()[1])
    t0 = time.perf_counter()
    per = _score({n: (src, TESTS) for n, src in progs.items()})
    alone = time.perf_counter() - t0
    top = ALLOWED_TOP | {Path(runner._interpreter()[0]).parts[1]}
    probe_scores = _score({n: (probe_program(c), TESTS) for n, c in probes(keys, top).items()})
    trick_scores = _score({f"{fmt}: {n}": (src, trick_tests()[fmt])
                           for fmt, named in tricks().items() for n, src in named.items()})

    t = time.perf_counter()
    batch_rewards = get_task("code").rewards([_problem()] * len(progs), list(progs.values()))
    batch = time.perf_counter() - t
    honest_s, honest_mean = _honest_batch()
    runner._interpreter()  # cached: the plain run below swaps it for one batch
    saved, runner._interpreter = runner._interpreter, lambda: (sys.executable, runner.PLAIN)
    runner.allow_unisolated(True)
    try:
        plain_s, plain_mean = _honest_batch()
    finally:
        runner._interpreter = saved
        runner.allow_unisolated(False)
    intact = (canary / "keep.txt").read_text() == "precious"
    shutil.rmtree(keys_dir, ignore_errors=True)
    report = {"isolation": mode, "programs": len(progs), "alone_s": round(alone, 1),
              "batch_s": round(batch, 1), "max_reward": max(r["reward"] for r in per.values()),
              "batch_max_reward": max(batch_rewards), "canary_intact": intact,
              "probes_max_reward": max(r["reward"] for r in probe_scores.values()),
              "tricks_max_reward": max(r["reward"] for r in trick_scores.values()),
              "honest_programs": HONEST, "honest_ms": round(1000 * honest_s / HONEST, 2),
              "honest_mean_reward": honest_mean,
              "plain_ms": round(1000 * plain_s / HONEST, 2), "plain_mean_reward": plain_mean,
              "per_program": per, "probes": probe_scores, "tricks": trick_scores,
              "cores": os.cpu_count()}
    write_json(OUT / "hostile.json", report)
    ratio = report["honest_ms"] / report["plain_ms"]
    lines = [f"# Hostile programs ({len(progs)}), isolation mode: {mode}", "",
             "Command: `python benchmarks/hostile.py` (as root: the hardened mode).", "",
             f"- one after another: {alone:.1f} s (target <= 200 s); highest reward "
             f"{report['max_reward']}; canary intact: {intact}",
             f"- as one reward batch (2 at a time): {batch:.1f} s, highest reward "
             f"{report['batch_max_reward']}",
             f"- access probes ({len(probe_scores)}): highest reward "
             f"{report['probes_max_reward']} (1 would mean a hole)",
             f"- equality tricks x test formats ({len(trick_scores)}): highest reward "
             f"{report['tricks_max_reward']}",
             f"- {HONEST} honest programs as one batch (2 at a time): {report['honest_ms']} ms "
             f"per program in mode {mode}, {report['plain_ms']} ms unisolated in the same run "
             f"({ratio:.2f}x); mean reward {honest_mean:.2f}", "",
             "| program | reward | seconds |", "|---|---:|---:|"]
    for table in (per, probe_scores, trick_scores):
        lines += [f"| {n} | {r['reward']} | {r['seconds']} |" for n, r in table.items()]
    (OUT / "hostile.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[:10]))


if __name__ == "__main__":
    main()
