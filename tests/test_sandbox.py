import os
import time

import pytest

from mintrl.sandbox import isolation, run_python


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
    """Root (to become another user), bubblewrap and the system's python3. As root on Debian
    or Ubuntu the README's test command installs bubblewrap (tests/system_packages.py), so
    there its absence is a failure, not a skip."""
    import shutil

    if os.geteuid() == 0 and shutil.which("apt-get") and not shutil.which("bwrap"):
        pytest.fail("bubblewrap is missing on a Debian/Ubuntu machine run as root: run "
                    "`python tests/system_packages.py` (part of the README's test command)")
    return (os.geteuid() == 0 and shutil.which("bwrap") is not None
            and shutil.which("setpriv") is not None and os.path.exists("/usr/bin/python3"))


def test_a_non_root_caller_gets_namespaces_through_bubblewrap():
    """As an ordinary user (uid 65534, whose files the programs could otherwise delete),
    hostile programs cannot delete that user's files, read its ~/.ssh or anything else of the
    machine beyond their interpreter (the probes of tests/hostile_programs.py), reach a
    socket of the machine, leave a file outside their folder, outlive the run or kill the
    caller."""
    import json
    import socket
    import subprocess
    import tempfile
    from pathlib import Path

    from hostile_programs import ALLOWED_TOP, answer_keys_in, probe_program, probes

    if not _bwrap_for_others():
        pytest.skip("needs root (to become another user), bubblewrap and the system's python3")
    repo = Path(__file__).resolve().parents[1]
    base = Path(tempfile.mkdtemp(prefix="mintrl-user-", dir="/var/tmp"))
    try:
        home, canary = base / "home", base / "canary"
        keys = answer_keys_in(base / "keys")
        (home / ".ssh").mkdir(parents=True)
        (home / ".ssh" / "id_rsa").write_text("SECRET KEY")
        canary.mkdir()
        (canary / "keep.txt").write_text("precious")
        top = ALLOWED_TOP | {Path(os.path.realpath("/usr/bin/python3")).parts[1]}
        found = {n: probe_program(c) for n, c in probes(keys, top).items()}
        (base / "probes.json").write_text(json.dumps(found))
        for p in [base, *base.rglob("*")]:
            if not str(p).startswith(str(base / "keys")):
                os.chown(p, 65534, 65534)
        os.chmod(base, 0o755)
        srv = socket.socket()
        srv.bind(("127.0.0.1", 0))
        srv.listen(4)
        srv.settimeout(0.1)
        res = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3",
             str(repo / "tests" / "sandbox_as_user.py"), str(canary),
             str(srv.getsockname()[1]), str(base / "probes.json")],
            env={"HOME": str(home), "PYTHONPATH": str(repo), "PATH": os.environ["PATH"]},
            capture_output=True, text=True, timeout=300, cwd="/")
        assert res.returncode == 0, res.stderr[-3000:]
        out = json.loads(res.stdout.splitlines()[-1])
        r = out["results"]
        assert out["isolation"] == "bwrap", res.stderr[-500:]
        assert int(r["pid"]["stdout"]) <= 3  # its own PID namespace
        assert sorted(os.listdir(canary)) == ["keep.txt"]  # nothing deleted, nothing written
        assert (canary / "keep.txt").read_text() == "precious"
        assert "SECRET" not in r["ssh_key"]["stdout"] and r["ssh_key"]["rc"] != 0
        assert r["home_listing"]["rc"] != 0  # $HOME is not in the view
        holes = {k: v["stdout"] for k, v in r.items()
                 if k.startswith("probe:") and v["stdout"].strip() != "1"}
        assert holes == {}  # f(1) == 1: every access failed
        assert out["honest"] == 1.0 and out["tricks"] == dict.fromkeys(out["tricks"], 0.0)
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


def _visible(path: str, view) -> bool:
    def inside(p, d):
        return p == d or p.startswith(d.rstrip("/") + "/")

    return (any(inside(path, b) for b in view.binds)
            and not any(inside(path, h) for h in view.hidden))


def test_the_view_holds_the_interpreter_and_its_libraries_not_site_packages_or_the_repo():
    import sys
    from pathlib import Path

    from mintrl.sandbox.view import elf_interpreter, interpreter_view, resolve

    python = os.path.realpath(sys.executable)
    view = interpreter_view(python)
    assert _visible(python, view) and _visible(os.path.realpath(os.__file__), view)
    site = [p for p in sys.path if "site-packages" in p or "dist-packages" in p]
    assert site and not [p for p in site if _visible(os.path.realpath(p), view)]
    repo = Path(__file__).resolve().parents[1]
    assert not _visible(str(repo), view) and not _visible(str(repo / "README.md"), view)
    loader = elf_interpreter(python)
    if loader:  # a dynamically linked interpreter: its loader is reachable through the links
        real, links = resolve(loader)
        assert _visible(real, view) and set(links) <= set(view.links)


@pytest.mark.skipif(isolation() == "plain", reason="no isolation mode works on this machine")
def test_the_standard_library_and_its_extension_modules_work_in_the_view():
    src = ("import json, ssl, sqlite3, hashlib, decimal, ctypes, zlib, lzma, bz2, math\n"
           "import datetime, re, subprocess, multiprocessing, unicodedata, csv, random\n"
           "print(hashlib.sha256(b'x').hexdigest()[:8], json.dumps([1]), round(math.pi, 3),"
           " 'é'.encode())")
    res = run_python(src)
    assert res.returncode == 0, res.stderr
    assert res.stdout == "2d711642 [1] 3.142 b'\\xc3\\xa9'\n"
    assert res.stderr == ""  # no warning at start (locale, missing files)
