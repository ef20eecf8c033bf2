"""Hostile programs through the sandbox as a non-root caller (run by tests/test_sandbox.py as
an unprivileged uid with the system's Python; needs only the standard library):

    python3 tests/sandbox_as_user.py CANARY_DIR PORT PROBES.json   # prints one JSON object

PROBES.json maps a name to a program that defines ``f``; ``f(1)`` is printed after it (2 when
the probe's access succeeded: tests/hostile_programs.py).
"""

import json
import os
import sys
import time

from hostile_programs import trick_tests, tricks

from mintrl.rewards import score_program
from mintrl.sandbox import isolation, run_python

canary, port = sys.argv[1], int(sys.argv[2])
with open(sys.argv[3]) as fh:
    probes = json.load(fh)
home = os.environ["HOME"]
escape = f"/tmp/{os.path.basename(os.path.dirname(canary))}-escaped"  # unique to this test
PROGRAMS = {
    "pid": "import os\nprint(os.getpid())",
    "rm_rf": f"import shutil\nshutil.rmtree({canary!r})",
    "os_system": f"import os\nos.system('rm -rf {canary}')\nprint(os.listdir({canary!r}))",
    "ssh_key": f"print(open({home!r} + '/.ssh/id_rsa').read())",
    "home_listing": f"import os\nprint(os.listdir({home!r}))",
    "socket": f"import socket\nsocket.create_connection(('127.0.0.1', {port}), 1)\nprint('in')",
    "tmp_escape": f"open({escape!r}, 'w').write('x')",
    "daemon": ("import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(2)\n"
               f"    open({canary!r} + '/pwned', 'w').write('x')\nprint('parent done')"),
    "fork_bomb": "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n"
                 "        pass",
    "kill_all": "import os, signal\nos.kill(-1, signal.SIGKILL)",
}
PROGRAMS.update({f"probe: {name}": src + "\nprint(f(1))\n" for name, src in probes.items()})
out = {"isolation": isolation(), "results": {}}
for name, src in PROGRAMS.items():
    t0 = time.monotonic()
    res = run_python(src, timeout_s=3)
    out["results"][name] = {"rc": res.returncode, "stdout": res.stdout, "stderr": res.stderr[-300:],
                            "seconds": time.monotonic() - t0}
out["tricks"] = {f"{fmt}: {name}": score_program(src, trick_tests()[fmt]).reward
                 for fmt, named in tricks().items() for name, src in named.items()}
out["honest"] = score_program("def f(x):\n    return x + 1\n", trick_tests()["functional"]).reward
time.sleep(2.5)  # the daemon would have written by now
out["escaped"] = os.path.exists(escape)
print(json.dumps(out))
