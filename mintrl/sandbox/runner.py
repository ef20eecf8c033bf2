"""Run untrusted Python in a separate, limited process (DESIGN.md §3).

Every run gets: its own session (process group); a fresh temporary directory as working
directory; an empty environment; an isolated interpreter (``-I -S -B``: no user site, no
site-packages, no PYTHON* variables); rlimits on CPU time, address space, file size (which
also caps stdout and stderr: they go to files), open files and processes; a wall-clock kill of
the whole process group. The caller passes inputs in the source; expected outputs never enter
the sandbox, and the output is read back through the file descriptors the parent opened, so a
program that renames or replaces its output files changes nothing.

When the caller is root (CI, containers, most clusters' job images), each run is also
``unshare``d into new network, PID, IPC and UTS namespaces — no network but a loopback that is
down, and when the run ends its PID namespace dies with every process in it, daemons that
called ``setsid`` included — and ``setpriv`` drops to a fresh unprivileged uid/gid chosen at
random for that run, with no groups, no capabilities and no-new-privs: the program cannot
write anything it did not create, cannot read root's files, and cannot signal or touch a
concurrent sandbox (another uid). Both tools are util-linux, present on every Debian/Ubuntu.

A non-root caller (a cluster user) with bubblewrap (``bwrap``, Debian's ``bubblewrap``) and
unprivileged user namespaces gets the namespaces through it instead: new user, network, PID,
IPC, UTS and cgroup namespaces, the whole filesystem read-only except the run's own folder,
/tmp a fresh tmpfs, /home, /root and $HOME hidden behind empty tmpfs (no ~/.ssh, no
credentials), no capabilities, killed with its parent. It still runs as the caller's uid
(only root can hand out others), so its process limit is the caller's current count plus
``Limits.processes``. Without bubblewrap a non-root caller keeps the rest (README).
"""

from __future__ import annotations

import contextlib
import os
import resource
import secrets
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import warnings
from dataclasses import dataclass
from functools import cache
from pathlib import Path


@dataclass(frozen=True)
class SandboxResult:
    returncode: int  # negative: killed by that signal
    stdout: str
    stderr: str
    timed_out: bool


@dataclass(frozen=True)
class Limits:
    cpu_s: int = 5
    address_space_mb: int = 1024
    file_size_mb: int = 8  # also caps stdout and stderr, which go to files
    open_files: int = 64
    processes: int = 32  # per uid: each hardened run has a uid of its own (fork bombs stop here)


def _set_limits(limits: Limits, hardened: bool):
    def apply() -> None:
        mb = 1024 * 1024
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s))
        resource.setrlimit(resource.RLIMIT_AS, (limits.address_space_mb * mb,) * 2)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_size_mb * mb,) * 2)
        resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files,) * 2)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if hardened:  # counted per uid: only meaningful once the run has a uid of its own
            resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes,) * 2)

    return apply


def _read_capped(f, cap: int) -> str:
    f.seek(0)
    return f.read(cap).decode("utf-8", errors="replace")


def _reachable_by_others(path: str) -> bool:
    """Can an unprivileged uid execute ``path`` and read its installation? (``/root`` is
    0700 on many images, and a pyenv interpreter under it is out of reach.)"""
    real = Path(os.path.realpath(path))
    for part in [*real.parents, real]:
        try:
            mode = part.stat().st_mode
        except OSError:
            return False
        if not mode & stat.S_IXOTH:
            return False
    return True


ROOT, BWRAP, PLAIN = "root", "bwrap", "plain"  # isolation modes (module doc)


@cache
def _interpreter() -> tuple[str, str]:
    """(python to run candidates with, isolation mode). ``root`` needs root, the util-linux
    tools, and an interpreter an unprivileged uid can run: ours, else the system's
    (candidates use the standard library only); ``bwrap`` a non-root caller whose bubblewrap
    works; else ``plain``."""
    if os.name != "posix":
        return sys.executable, PLAIN
    if os.geteuid() != 0:
        return sys.executable, _bwrap_mode()
    if not (shutil.which("unshare") and shutil.which("setpriv")):
        warnings.warn("mintrl.sandbox: unshare/setpriv (util-linux) not found: generated code "
                      "runs without namespaces or a dropped uid", stacklevel=2)
        return sys.executable, PLAIN
    for candidate in (sys.executable, "/usr/bin/python3", "/usr/local/bin/python3"):
        if Path(candidate).exists() and _reachable_by_others(candidate):
            # Root without CAP_SYS_ADMIN (a default Docker container) cannot unshare: every
            # run would fail and every program would score 0. Try once.
            probe = _command(candidate, ROOT, 200_000)[:-1] + ["-c", "pass"]
            try:
                ok = subprocess.run(probe, capture_output=True, timeout=30,
                                    cwd="/").returncode == 0
            except (OSError, subprocess.TimeoutExpired):
                ok = False
            if ok:
                return candidate, ROOT
            warnings.warn("mintrl.sandbox: unshare/setpriv are not permitted here (a container "
                          "without CAP_SYS_ADMIN?): generated code runs without namespaces or "
                          "a dropped uid", stacklevel=2)
            return sys.executable, PLAIN
    warnings.warn("mintrl.sandbox: no Python interpreter an unprivileged uid can run (the "
                  f"installation under {sys.base_prefix} is not world-readable): generated "
                  "code runs without a dropped uid", stacklevel=2)
    return sys.executable, PLAIN


def _bwrap_mode() -> str:
    """``bwrap`` when bubblewrap can make its namespaces here (unprivileged user namespaces
    are off on some clusters), tried once; else ``plain``, with a warning."""
    if not shutil.which("bwrap"):
        warnings.warn("mintrl.sandbox: not root and no bubblewrap (bwrap): generated code runs "
                      "as you, without namespaces (install Debian's `bubblewrap`)", stacklevel=3)
        return PLAIN
    with tempfile.TemporaryDirectory(prefix="mintrl-sandbox-") as tmp:
        probe = _command(sys.executable, BWRAP, 0, work=Path(tmp))[:-1] + ["-c", "pass"]
        try:
            ok = subprocess.run(probe, capture_output=True, timeout=30, cwd=tmp).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            ok = False
    if not ok:
        warnings.warn("mintrl.sandbox: bubblewrap cannot create namespaces here (unprivileged "
                      "user namespaces disabled?): generated code runs as you, without "
                      "namespaces", stacklevel=3)
    return BWRAP if ok else PLAIN


def _own_processes() -> int:
    """Processes of this uid now (RLIMIT_NPROC counts them all, the sandbox's included)."""
    uid, n = os.getuid(), 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                n += entry.stat().st_uid == uid
    return n


def _hidden_dirs() -> list[str]:
    """Where credentials live: hidden behind empty tmpfs in a bwrap run."""
    dirs = ["/home", "/root", os.environ.get("HOME", "")]
    return [d for d in dict.fromkeys(dirs) if d and os.path.isdir(d) and d != "/"]


def _exposed_dirs() -> list[str]:
    """The interpreter's installation, re-exposed read-only when it lives in a hidden dir."""
    dirs = [sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable))]
    return [d for d in dict.fromkeys(dirs) if os.path.isdir(d)]


def _bwrap(work: Path) -> list[str]:
    cmd = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
           "--tmpfs", "/tmp"]
    for d in _hidden_dirs():
        cmd += ["--tmpfs", d]
    for d in _exposed_dirs():
        cmd += ["--ro-bind", d, d]
    return cmd + ["--bind", str(work), str(work), "--chdir", str(work), "--unshare-all",
                  "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--"]


def _prlimit(limits: Limits, mode: str) -> list[str]:
    """The rlimits as a ``prlimit`` prefix (util-linux). Setting them in a ``preexec_fn``
    instead makes Popen fork the whole parent, page tables and all: with a model loaded
    (600 MB) a run took 38 ms that way against 16 ms through vfork and prlimit."""
    mb = 1024 * 1024
    nproc = []  # per uid: see Limits
    if mode == ROOT:
        nproc = [f"--nproc={limits.processes}"]
    elif mode == BWRAP:  # the caller's own uid: its processes count too
        nproc = [f"--nproc={_own_processes() + limits.processes}"]
    return ["prlimit", f"--cpu={limits.cpu_s}", f"--as={limits.address_space_mb * mb}",
            f"--fsize={limits.file_size_mb * mb}", f"--nofile={limits.open_files}", "--core=0",
            *nproc, "--"]


def _command(python: str, mode: str, uid: int, limits: Limits | None = None,
             work: Path | None = None) -> list[str]:
    """The command line of one run: [prlimit ...] [unshare ... setpriv ... | bwrap ...]
    python main.py (``work``: the run's folder, which bwrap binds writable)."""
    run = [python, "-I", "-S", "-B", "main.py"]
    if mode == BWRAP:
        run = _bwrap(work) + run
    elif mode == ROOT:
        run = ["unshare", "--net", "--pid", "--ipc", "--uts", "--fork", "--kill-child", "--",
               "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
               "--inh-caps=-all", "--no-new-privs", "--", *run]
    return (_prlimit(limits, mode) + run) if limits and _HAS_PRLIMIT else run


_HAS_PRLIMIT = shutil.which("prlimit") is not None


def _wait(proc: subprocess.Popen, timeout_s: float) -> bool:
    """Block until ``proc`` exits or ``timeout_s`` passes; True on timeout.

    ``Popen.wait(timeout=...)`` polls with sleeps that grow to 50 ms, so a 10 ms program was
    noticed after about 30 ms (a 4x cost on every reward of the code task); a pidfd wakes us
    the moment the process exits. Where there is no pidfd (not Linux), fall back to polling.
    """
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        try:
            proc.wait(timeout=timeout_s)
            return False
        except subprocess.TimeoutExpired:
            return True
    try:
        ready, _, _ = select.select([fd], [], [], timeout_s)
        return not ready
    finally:
        os.close(fd)


def run_python(
    source: str, timeout_s: float = 5.0, limits: Limits | None = None, max_output: int = 1 << 16,
    stdin: str | None = None,
) -> SandboxResult:
    """Run ``source`` as a script in the sandbox, ``stdin`` (text) on its standard input, and
    return its (capped) output."""
    limits = limits or Limits(cpu_s=max(1, int(timeout_s) + 1))
    python, mode = _interpreter()
    uid = 200_000 + secrets.randbelow(1 << 20)  # this run's own unprivileged uid and gid
    with tempfile.TemporaryDirectory(prefix="mintrl-sandbox-") as tmp:
        work = Path(tmp)
        (work / "main.py").write_text(source, encoding="utf-8", errors="surrogatepass")
        if mode == ROOT:
            os.chown(work, uid, uid)  # its working directory is the only place it may write
        # Opened here, before the run: the program writes and reads through these
        # descriptors, and we read back through them, whatever it does to the paths.
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
                tempfile.TemporaryFile() as inp:
            inp.write((stdin or "").encode("utf-8", errors="surrogatepass"))
            inp.seek(0)
            proc = subprocess.Popen(
                _command(python, mode, uid, limits, work),
                cwd=work,
                env={},
                stdin=inp,
                stdout=out,
                stderr=err,
                start_new_session=True,  # own process group: the kill below reaches children
                preexec_fn=None if _HAS_PRLIMIT else _set_limits(limits, mode == ROOT),
                close_fds=True,
            )
            try:
                timed_out = _wait(proc, timeout_s)
            finally:
                # Kill the whole group, also after a normal exit (leftover children); the
                # PID namespace takes anything that left the group with it.
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            return SandboxResult(
                returncode=proc.returncode,
                stdout=_read_capped(out, max_output),
                stderr=_read_capped(err, max_output),
                timed_out=timed_out,
            )


def hardened() -> bool:
    """Whether runs get namespaces and a dropped uid on this machine (see the module doc)."""
    return _interpreter()[1] == ROOT


def isolation() -> str:
    """This machine's isolation mode: ``root`` (namespaces and a uid of the run's own),
    ``bwrap`` (namespaces through bubblewrap, the caller's uid) or ``plain`` (rlimits, an own
    session and folder only)."""
    return _interpreter()[1]
