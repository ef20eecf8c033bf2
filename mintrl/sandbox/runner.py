"""Run untrusted Python in a separate, limited process (docs/toy_lab.md, "The sandbox").

Every run gets: its own session (process group); a fresh working folder; an empty
environment; an isolated interpreter (``-I -S -B``: no user site, no site-packages, no PYTHON*
variables); rlimits on CPU time, address space, file size (which also caps stdout and stderr:
they go to files), open files and processes; a wall-clock kill of the whole process group. The
caller passes inputs in the source; expected outputs never enter the sandbox, and the output
is read back through the file descriptors the parent opened, so a program that renames or
replaces its output files changes nothing.

Its filesystem is a view with only what the interpreter needs (``view.interpreter_view``): the
interpreter, its standard library without site-packages and the shared libraries it loads,
read-only; ``/dev/null``-class devices; a fresh ``/tmp``; its own folder, writable. Not the
repository, ``results/``, checkpoints, the Hugging Face cache, ``/home``, ``/root``, ``/etc``
(but the loader's cache) or ``/proc``. Two isolation modes build it:

- ``root`` (CI, containers, most clusters' job images): ``unshare`` (util-linux) makes new
  mount, network, PID, IPC and UTS namespaces — no network but a loopback that is down, and
  when the run ends its PID namespace dies with every process in it — and ``boot`` builds the
  view with bind mounts and ``pivot_root``, then drops to a fresh unprivileged uid/gid chosen
  at random for that run, with no groups, no capabilities and no-new-privs: it cannot signal
  or read a concurrent sandbox (another uid).
- ``bwrap``: a non-root caller with bubblewrap (Debian's ``bubblewrap``) and unprivileged user
  namespaces gets the same view and new user, network, PID, IPC, UTS and cgroup namespaces
  through it, killed with its parent. It runs as the caller's uid (only root can hand out
  others), so its process limit is the caller's current count plus ``Limits.processes``.

Where neither works, ``run_python`` refuses with ``SandboxUnavailable`` unless the caller opted
in to ``plain`` runs (rlimits, an own session and folder, and the whole filesystem readable):
``allow_unisolated(True)``, which the stages call for the config key ``sandbox.unisolated``.
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

from mintrl.sandbox.view import bwrap_args, interpreter_view


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


class SandboxUnavailable(RuntimeError):
    """Neither isolation mode works on this machine and unisolated runs were not allowed."""


ROOT, BWRAP, PLAIN = "root", "bwrap", "plain"  # isolation modes (module doc)
_UNISOLATED = {"allowed": False}


def allow_unisolated(allowed: bool) -> None:
    """Let code run ``plain`` where no isolation mode works (config ``sandbox.unisolated``)."""
    _UNISOLATED["allowed"] = bool(allowed)


def _set_limits(limits: Limits):
    """The rlimits as a ``preexec_fn``, where there is no ``prlimit`` (not root mode: its
    ``boot`` sets them)."""

    def apply() -> None:
        mb = 1024 * 1024
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s))
        resource.setrlimit(resource.RLIMIT_AS, (limits.address_space_mb * mb,) * 2)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_size_mb * mb,) * 2)
        resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files,) * 2)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

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


def _works(python: str, mode: str) -> bool:
    """One trial run: can this mode start ``python`` in its view here?"""
    try:
        res = _execute(python, mode, "print('ok')", 30.0, Limits(cpu_s=30), 1000, None)
    except (OSError, subprocess.SubprocessError, ValueError):
        return False
    return res.returncode == 0 and res.stdout == "ok\n"


@cache
def _interpreter() -> tuple[str, str]:
    """(python to run candidates with, isolation mode). ``root`` needs root, util-linux's
    ``unshare``, mount namespaces, and an interpreter an unprivileged uid can run: ours, else
    the system's (candidates use the standard library only); ``bwrap`` a non-root caller whose
    bubblewrap works; else ``plain``. Each mode is tried once before it is chosen."""
    ours = os.path.realpath(sys.executable)
    if os.name != "posix":
        return ours, PLAIN
    if os.geteuid() != 0:
        if not shutil.which("bwrap"):
            warnings.warn("mintrl.sandbox: not root and no bubblewrap (bwrap): no isolation "
                          "for generated code (install Debian's `bubblewrap`)", stacklevel=3)
            return ours, PLAIN
        if _works(ours, BWRAP):
            return ours, BWRAP
        warnings.warn("mintrl.sandbox: bubblewrap cannot create namespaces here (unprivileged "
                      "user namespaces disabled?): no isolation for generated code",
                      stacklevel=3)
        return ours, PLAIN
    if not shutil.which("unshare"):
        warnings.warn("mintrl.sandbox: unshare (util-linux) not found: no isolation for "
                      "generated code", stacklevel=3)
        return ours, PLAIN
    for candidate in (sys.executable, "/usr/bin/python3", "/usr/local/bin/python3"):
        if Path(candidate).exists() and _reachable_by_others(candidate):
            python = os.path.realpath(candidate)
            # Root without CAP_SYS_ADMIN (a default Docker container) cannot unshare or
            # mount: every run would fail and every program would score 0. Try once.
            if _works(python, ROOT):
                return python, ROOT
            warnings.warn("mintrl.sandbox: namespaces or mounts are not permitted here (a "
                          "container without CAP_SYS_ADMIN?): no isolation for generated "
                          "code", stacklevel=3)
            return ours, PLAIN
    warnings.warn("mintrl.sandbox: no Python interpreter an unprivileged uid can run (the "
                  f"installation under {sys.base_prefix} is not world-readable): no isolation "
                  "for generated code", stacklevel=3)
    return ours, PLAIN


def _own_processes() -> int:
    """Processes of this uid now (RLIMIT_NPROC counts them all, the sandbox's included)."""
    uid, n = os.getuid(), 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                n += entry.stat().st_uid == uid
    return n


def _prlimit(limits: Limits, mode: str) -> list[str]:
    """The rlimits as a ``prlimit`` prefix (util-linux). Setting them in a ``preexec_fn``
    instead makes Popen fork the whole parent, page tables and all: with a model loaded
    (600 MB) a run took 38 ms that way against 16 ms through vfork and prlimit."""
    mb = 1024 * 1024
    nproc = []  # per uid: see Limits
    if mode == BWRAP:  # the caller's own uid: its processes count too
        nproc = [f"--nproc={_own_processes() + limits.processes}"]
    return ["prlimit", f"--cpu={limits.cpu_s}", f"--as={limits.address_space_mb * mb}",
            f"--fsize={limits.file_size_mb * mb}", f"--nofile={limits.open_files}", "--core=0",
            *nproc, "--"]


# ``boot`` reaches the interpreter compiled (by that interpreter, once): compiling its source
# in every run cost 1.4 ms of a 15 ms run.
_BOOT_STUB = "import marshal,sys;exec(marshal.loads(bytes.fromhex(sys.argv.pop(1))))"
_COMPILE = ("import marshal,sys;sys.stdout.write(marshal.dumps(compile(sys.stdin.read(),"
            "'mintrl-boot','exec')).hex())")


@cache
def _boot_code(python: str) -> str:
    source = (Path(__file__).parent / "boot.py").read_text(encoding="utf-8")
    return subprocess.run([python, "-I", "-S", "-B", "-c", _COMPILE], input=source, text=True,
                          capture_output=True, check=True, timeout=60, env={}).stdout


def _command(python: str, mode: str, uid: int, limits: Limits, base: Path) -> list[str]:
    """The command line of one run in folder ``base`` (``work/main.py``, the program, and for
    ``root`` an empty ``root/``, where the view is mounted)."""
    work, main = base / "work", str(base / "work" / "main.py")
    if mode == ROOT:  # boot sets the rlimits itself: one exec fewer than prlimit
        mb = 1024 * 1024
        rlimits = [limits.cpu_s, limits.address_space_mb * mb, limits.file_size_mb * mb,
                   limits.open_files, limits.processes]
        return ["unshare", "--mount", "--net", "--pid", "--ipc", "--uts", "--fork",
                "--kill-child", "--", python, "-I", "-S", "-B", "-c", _BOOT_STUB,
                _boot_code(python), str(uid), str(base / "root"), str(work), main,
                *map(str, rlimits), *interpreter_view(python).boot_args()]
    if mode == BWRAP:
        run = [*bwrap_args(interpreter_view(python), work), python, "-I", "-S", "-B", main]
    else:
        run = [python, "-I", "-S", "-B", main]
    return (_prlimit(limits, mode) + run) if _HAS_PRLIMIT else run


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


def _execute(python: str, mode: str, source: str, timeout_s: float, limits: Limits,
             max_output: int, stdin: str | None) -> SandboxResult:
    uid = 200_000 + secrets.randbelow(1 << 20)  # this run's own unprivileged uid and gid
    with tempfile.TemporaryDirectory(prefix="mintrl-sandbox-") as tmp:
        base = Path(tmp)
        (base / "work").mkdir()
        (base / "work" / "main.py").write_text(source, encoding="utf-8",
                                               errors="surrogatepass")
        if mode == ROOT:
            (base / "root").mkdir()
            os.chown(base / "work", uid, uid)  # its folder is the only place it may write
        # Opened here, before the run: the program writes and reads through these
        # descriptors, and we read back through them, whatever it does to the paths.
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
                tempfile.TemporaryFile() as inp:
            inp.write((stdin or "").encode("utf-8", errors="surrogatepass"))
            inp.seek(0)
            proc = subprocess.Popen(
                _command(python, mode, uid, limits, base),
                cwd=base / "work",
                env={},
                stdin=inp,
                stdout=out,
                stderr=err,
                start_new_session=True,  # own process group: the kill below reaches children
                preexec_fn=None if _HAS_PRLIMIT or mode == ROOT else _set_limits(limits),
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


def run_python(
    source: str, timeout_s: float = 5.0, limits: Limits | None = None, max_output: int = 1 << 16,
    stdin: str | None = None,
) -> SandboxResult:
    """Run ``source`` as a script in the sandbox, ``stdin`` (text) on its standard input, and
    return its (capped) output. Raises ``SandboxUnavailable`` where no isolation works and
    ``allow_unisolated`` was not called."""
    python, mode = _interpreter()
    if mode == PLAIN and not _UNISOLATED["allowed"]:
        raise SandboxUnavailable(
            "mintrl.sandbox: generated code cannot be isolated here (not root with util-linux "
            "namespaces, and no working bubblewrap), so it would read the whole filesystem; "
            "install bubblewrap (Debian: apt-get install bubblewrap), run as root, or set "
            "`sandbox: {unisolated: true}` in the config to run it anyway")
    limits = limits or Limits(cpu_s=max(1, int(timeout_s) + 1))
    return _execute(python, mode, source, timeout_s, limits, max_output, stdin)


def hardened() -> bool:
    """Whether runs get namespaces and a uid of their own on this machine (module doc)."""
    return _interpreter()[1] == ROOT


def isolation() -> str:
    """This machine's isolation mode: ``root`` (namespaces, the view, and a uid of the run's
    own), ``bwrap`` (namespaces and the view through bubblewrap, the caller's uid) or
    ``plain`` (rlimits, an own session and folder only)."""
    return _interpreter()[1]
