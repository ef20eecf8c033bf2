import os
import time

import pytest

from mintrl.sandbox import run_python


def test_runs_code_and_captures_output():
    res = run_python("print(6 * 7)")
    assert (res.returncode, res.stdout.strip(), res.timed_out) == (0, "42", False)


def test_crash_is_reported_not_raised():
    res = run_python("raise ValueError('boom')")
    assert res.returncode != 0 and "ValueError" in res.stderr


def test_infinite_loop_is_killed_within_the_wall_clock_bound():
    t0 = time.monotonic()
    res = run_python("while True:\n    pass", timeout_s=1.0)
    assert res.timed_out and time.monotonic() - t0 < 4


def test_empty_environment_and_fresh_directory():
    res = run_python("import os\nprint(sorted(os.environ))\nprint(sorted(os.listdir('.')))")
    env_line, files_line = res.stdout.strip().splitlines()
    assert env_line in ("[]", "['LC_CTYPE']")  # CPython may set LC_CTYPE itself
    assert "main.py" in files_line


def test_memory_limit_stops_a_huge_allocation():
    res = run_python("x = bytearray(4 * 1024**3)\nprint('allocated')")
    assert res.returncode != 0 and "allocated" not in res.stdout


def test_output_is_capped():
    res = run_python("import sys\nsys.stdout.write('x' * 10**6)", max_output=1000)
    assert len(res.stdout) == 1000


def _bwrap_for_others() -> bool:
    import shutil

    return (os.geteuid() == 0 and shutil.which("bwrap") is not None
            and shutil.which("setpriv") is not None and os.path.exists("/usr/bin/python3"))


@pytest.mark.skipif(not _bwrap_for_others(), reason="needs root (to become another user), "
                    "bubblewrap and the system's python3")
def test_a_non_root_caller_gets_namespaces_through_bubblewrap(tmp_path):
    """As an ordinary user (uid 65534, whose files the programs could otherwise delete),
    hostile programs cannot delete that user's files, read its ~/.ssh, reach a socket of the
    machine, leave a file outside their folder, outlive the run or kill the caller."""
    import json
    import socket
    import subprocess
    import tempfile
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    base = Path(tempfile.mkdtemp(prefix="mintrl-user-", dir="/tmp"))
    try:
        home, canary = base / "home", base / "canary"
        (home / ".ssh").mkdir(parents=True)
        (home / ".ssh" / "id_rsa").write_text("SECRET KEY")
        canary.mkdir()
        (canary / "keep.txt").write_text("precious")
        for p in [base, *base.rglob("*")]:
            os.chown(p, 65534, 65534)
        os.chmod(base, 0o755)
        srv = socket.socket()
        srv.bind(("127.0.0.1", 0))
        srv.listen(4)
        srv.settimeout(0.1)
        res = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3",
             str(repo / "tests" / "sandbox_as_user.py"), str(canary),
             str(srv.getsockname()[1])],
            env={"HOME": str(home), "PYTHONPATH": str(repo), "PATH": os.environ["PATH"]},
            capture_output=True, text=True, timeout=300, cwd="/")
        assert res.returncode == 0, res.stderr[-3000:]
        out = json.loads(res.stdout.splitlines()[-1])
        r = out["results"]
        if out["isolation"] != "bwrap":
            pytest.skip(f"bubblewrap cannot make namespaces here: {res.stderr[-500:]}")
        assert int(r["pid"]["stdout"]) <= 3  # its own PID namespace
        assert sorted(os.listdir(canary)) == ["keep.txt"]  # nothing deleted, nothing written
        assert (canary / "keep.txt").read_text() == "precious"
        assert "SECRET" not in r["ssh_key"]["stdout"] and r["ssh_key"]["rc"] != 0
        assert r["home_listing"]["stdout"].strip() == "[]"  # an empty tmpfs over $HOME
        assert "in" not in r["socket"]["stdout"] and r["socket"]["rc"] != 0
        with pytest.raises(TimeoutError):
            srv.accept()
        assert not out["escaped"] and not Path(f"/tmp/{base.name}-escaped").exists()
        assert all(v["seconds"] < 8 for v in r.values()), {k: v["seconds"] for k, v in r.items()}
        left = subprocess.run(["ps", "-u", "65534", "-o", "pid="], capture_output=True,
                              text=True).stdout.split()
        assert left == []  # no daemon or fork-bomb child outlived its run
        srv.close()
    finally:
        import shutil

        shutil.rmtree(base, ignore_errors=True)
