"""Hostile generated programs (DESIGN.md §3, issue 8): each tries to cheat the reward or do
harm. Used by tests/test_hostile.py and benchmarks/hostile.py."""

from mintrl.rewards import CodeTests

# f(x) = x + 1 on three inputs; every hostile program below fails this one way or another.
TESTS = CodeTests("functional", [{"args": [1], "output": 2}, {"args": [5], "output": 6},
                                 {"args": [-3], "output": -2}], fn_name="f", timeout_s=3.0)



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
        "read /etc/passwd": "print(open('/etc/passwd').read()[:200])\ndef f(x): return x",
        "read ~/.ssh": "import os\nprint(os.listdir('/root/.ssh'))\ndef f(x): return x",
        "read the environment": "import os\nassert os.environ.get('HOME')\n"
                                "def f(x): return x + 1",
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
