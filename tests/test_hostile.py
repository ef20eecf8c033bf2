"""Generated code is hostile (docs/design.md §3): each program of tests/hostile_programs.py tries
to cheat the reward or do harm, and must score 0, leave the canary files outside the sandbox
untouched and finish within its time bound, rewarded through the path real code problems take."""

import os
import socket
import stat
import subprocess
import time

import pytest
from hostile_programs import (
    ALLOWED_TOP,
    TESTS,
    answer_keys_in,
    probe_program,
    probes,
    programs,
    trick_tests,
    tricks,
)

from mintrl.rewards import score_program
from mintrl.sandbox import hardened, run_python
from mintrl.sandbox.runner import _interpreter

BOUND_S = 8.0  # the timeout plus process start and teardown, with room for a busy machine


@pytest.fixture(scope="module")
def canary(tmp_path_factory):
    """Root-owned files outside the sandbox that no program may change."""
    d = tmp_path_factory.mktemp("canary")
    os.chmod(d, 0o755)
    (d / "keep.txt").write_text("precious")
    os.chmod(d / "keep.txt", 0o644)
    return d


@pytest.fixture(scope="module")
def listener():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(0.1)
    yield srv
    srv.close()


@pytest.mark.skipif(not hardened(), reason="the hardened sandbox needs root and util-linux")
def test_hostile_programs_score_0_do_no_harm_and_finish_in_time(canary, listener, monkeypatch):
    import secrets
    import types

    import mintrl.sandbox.runner

    used = []  # the uids this test's runs get (other sandboxes may run on the machine)

    def randbelow(n):
        used.append(200_000 + (k := secrets.randbelow(n)))
        return k

    monkeypatch.setattr(mintrl.sandbox.runner, "secrets",
                        types.SimpleNamespace(randbelow=randbelow))
    progs = programs(canary, listener.getsockname()[1])
    assert len(progs) >= 25
    slow, scored = {}, {}
    for name, src in progs.items():
        t0 = time.monotonic()
        scored[name] = score_program(src, TESTS).reward
        slow[name] = time.monotonic() - t0
    assert {n: r for n, r in scored.items() if r != 0.0} == {}
    assert {n: s for n, s in slow.items() if s > BOUND_S} == {}
    time.sleep(2.5)  # the daemon would write now, had it survived its PID namespace
    assert (canary / "keep.txt").read_text() == "precious"
    assert stat.S_IMODE(os.stat(canary / "keep.txt").st_mode) == 0o644
    with pytest.raises(TimeoutError):  # nothing ever connected to the parent's socket
        listener.accept()
    # No process of the runs' uids is left behind.
    assert len(used) >= len(progs)
    ps = subprocess.run(["ps", "-eo", "uid="], capture_output=True, text=True).stdout.split()
    assert not set(map(int, ps)) & set(used)


@pytest.mark.skipif(not hardened(), reason="the hardened sandbox needs root and util-linux")
def test_each_run_has_its_own_uid_no_network_and_its_own_pid_namespace():
    src = ("import os, socket\nprint(os.getuid(), os.getgid(), os.getpid(), os.getgroups())\n"
           "try:\n    socket.create_connection(('1.1.1.1', 53), 1)\n    print('net')\n"
           "except OSError:\n    print('no net')\n")
    a, b = (run_python(src).stdout.split("\n") for _ in range(2))
    uid_a, gid_a, pid_a, groups_a = a[0].split(" ", 3)
    assert uid_a == gid_a and int(uid_a) >= 200_000 and pid_a == "1" and groups_a == "[]"
    assert a[0].split()[0] != b[0].split()[0]  # a fresh uid per run
    assert a[1] == "no net"


@pytest.mark.skipif(not hardened(), reason="the hardened sandbox needs root and util-linux")
def test_a_rollout_batch_of_hostile_programs_scores_0_in_bounded_time(canary):
    """The batch path a rollout takes (the code task's reward, two sandbox runs at a time):
    every hostile program at once still scores 0, harms nothing and ends (the issue's bound for
    the 30 programs is 200 s on the 2-core machine; measured 9 s, benchmarks/results/hostile.md)."""
    from mintrl.tasks import Problem, grade

    progs = programs(canary, 1)  # port 1: nothing listens there
    problem = Problem("hostile", "code", 0, "f(x) = x + 1", "",
                      {"tests": {"format": "functional", "cases": TESTS.cases, "fn_name": "f",
                                 "timeout_s": TESTS.timeout_s}})
    t0 = time.monotonic()
    rewards = grade([problem] * len(progs), list(progs.values()))
    assert rewards == [0.0] * len(progs)
    assert time.monotonic() - t0 < 200
    time.sleep(2.5)
    assert (canary / "keep.txt").read_text() == "precious"


@pytest.fixture(scope="module")
def answer_keys():
    import shutil
    import tempfile
    from pathlib import Path

    base = Path(tempfile.mkdtemp(prefix="mintrl-keys-", dir="/var/tmp"))
    try:
        yield answer_keys_in(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _allowed_top() -> set[str]:
    """The view's top level: the fixed names, and where the sandbox's interpreter lives."""
    from pathlib import Path

    return ALLOWED_TOP | {Path(_interpreter()[0]).parts[1]}


@pytest.mark.skipif(not hardened(), reason="the hardened sandbox needs root and util-linux")
def test_a_program_sees_nothing_of_the_machine_but_its_interpreter(answer_keys):
    """Each probe returns the right answer exactly when its access succeeds: the repository,
    a run's hidden tests and checkpoints, /etc/passwd, a key in ~/.ssh, /root, /home,
    site-packages, the environment, anything at / beyond the view, /proc."""
    found = probes(answer_keys, _allowed_top())
    scored = {name: score_program(probe_program(code), TESTS).reward
              for name, code in found.items()}
    assert {n: r for n, r in scored.items() if r != 0.0} == {}


def test_the_probes_find_the_holes_of_an_unisolated_run(answer_keys, monkeypatch):
    """The same probes, run without isolation (``sandbox.unisolated``), score 1: a probe that
    scores 0 in the sandbox does so because the access failed, not because it cannot pass.
    (The environment is empty in every mode; /home and /root may be empty on a machine.)"""
    import mintrl.sandbox.runner as runner

    monkeypatch.setattr(runner, "_interpreter", lambda: (runner.sys.executable, runner.PLAIN))
    monkeypatch.setitem(runner._UNISOLATED, "allowed", True)
    found = probes(answer_keys, _allowed_top())
    scored = {name: score_program(probe_program(code), TESTS).reward
              for name, code in found.items()}
    may_be_closed = {"read the environment", "list /home", "read /root"}
    assert {n for n, r in scored.items() if r != 1.0} <= may_be_closed, scored
    for name in ("list /home", "read /root"):
        folder = "/" + name.split("/")[1]
        if os.access(folder, os.R_OK) and os.listdir(folder):
            assert scored[name] == 1.0, name


def test_unisolated_runs_are_refused_unless_the_config_allows_them(monkeypatch):
    import mintrl.sandbox.runner as runner
    from mintrl.sandbox import SandboxUnavailable

    monkeypatch.setattr(runner, "_interpreter", lambda: (runner.sys.executable, runner.PLAIN))
    monkeypatch.setitem(runner._UNISOLATED, "allowed", False)
    with pytest.raises(SandboxUnavailable, match="sandbox: {unisolated: true}"):
        run_python("print(1)")
    monkeypatch.setitem(runner._UNISOLATED, "allowed", True)
    assert run_python("print(1)").stdout == "1\n"


@pytest.mark.parametrize("fmt", sorted(trick_tests()))
def test_values_that_claim_to_be_equal_score_0_in_every_test_format(fmt):
    """An object equal to everything, int and str subclasses equal to everything, and NaN,
    against each test format: functional, assert (split: compared here; whole: in the
    sandbox, behind the plain-value wrapper) and stdin. The honest program passes each."""
    tests = trick_tests()[fmt]
    honest = ("x = int(input())\nprint(x + 1)\n" if fmt == "stdin"
              else "def f(x):\n    return x + 1\n")
    assert score_program(honest, tests).reward == 1.0
    scored = {name: score_program(src, tests).reward for name, src in tricks()[fmt].items()}
    assert scored == dict.fromkeys(scored, 0.0)


def test_a_stage_refuses_unisolated_code_in_one_line(monkeypatch, capsys):
    """Where no isolation works, a stage that runs code (its ``main`` under ``run_main``)
    exits 2 with one line naming the config key, not a traceback."""
    import mintrl.sandbox.runner as runner
    from mintrl.cli import run_main

    monkeypatch.setattr(runner, "_interpreter", lambda: (runner.sys.executable, runner.PLAIN))
    monkeypatch.setitem(runner._UNISOLATED, "allowed", False)
    with pytest.raises(SystemExit) as stop:
        run_main(lambda argv: run_python("print(1)"), [])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1
    assert err.startswith("error: mintrl.sandbox:") and "sandbox: {unisolated: true}" in err
