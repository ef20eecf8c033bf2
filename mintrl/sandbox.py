"""Run untrusted Python in a separate, limited process.

Today: its own session (process group), a fresh temporary directory as working dir, an
empty environment, isolated interpreter (``-I -S``: no user site, no site-packages, no
PYTHON* variables), rlimits on CPU time, address space, file size, open files and
processes, stdout/stderr to files capped by the file-size limit, and a wall-clock kill of
the whole process group. The caller passes inputs in the source; expected outputs never
enter the sandbox. (Namespaces and dropping privileges are a later hardening step.)
"""

from __future__ import annotations

import contextlib
import os
import resource
import select
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
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
    processes: int = 64  # per uid; counted against the caller's uid until privileges drop


def _set_limits(limits: Limits):
    def apply() -> None:
        mb = 1024 * 1024
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s))
        resource.setrlimit(resource.RLIMIT_AS, (limits.address_space_mb * mb,) * 2)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_size_mb * mb,) * 2)
        resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files,) * 2)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


def _read_capped(path: Path, cap: int) -> str:
    with open(path, "rb") as f:
        return f.read(cap).decode("utf-8", errors="replace")


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
    with tempfile.TemporaryDirectory(prefix="mintrl-sandbox-") as tmp:
        work = Path(tmp)
        (work / "main.py").write_text(source, encoding="utf-8", errors="surrogatepass")
        out_path, err_path, in_path = work / ".stdout", work / ".stderr", work / ".stdin"
        in_path.write_text(stdin or "", encoding="utf-8", errors="surrogatepass")
        with open(out_path, "wb") as out, open(err_path, "wb") as err, open(in_path, "rb") as inp:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-B", "main.py"],
                cwd=work,
                env={},
                stdin=inp,
                stdout=out,
                stderr=err,
                start_new_session=True,  # own process group: the kill below reaches children
                preexec_fn=_set_limits(limits),
                close_fds=True,
            )
            try:
                timed_out = _wait(proc, timeout_s)
            finally:
                # Kill the whole group, also after a normal exit (leftover children).
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        return SandboxResult(
            returncode=proc.returncode,
            stdout=_read_capped(out_path, max_output),
            stderr=_read_capped(err_path, max_output),
            timed_out=timed_out,
        )
