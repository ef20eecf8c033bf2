"""Math reward: the response's last ``\\boxed{...}`` answer checked against the gold answer by
math-verify (the reference checker), in bounded time wherever it is called.

Why a worker process: math-verify bounds its own parse and verify calls with ``signal.alarm``,
which works only in a process's main thread (elsewhere it raises), and its timeout exception
is a ``BaseException``. A sympy call stuck inside C code (``9^{9^{9^9}}``) does not see the
alarm at all. So every check runs in the main thread of a dedicated worker process, where the
alarm is safe, and the caller also enforces a hard outer bound: a worker that does not answer
in time is killed (with its whole process group) and replaced, and the answer scores 0.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import select
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass

_BOXED = ("\\boxed", "\\fbox")


def last_boxed(text: str) -> str | None:
    """Content of the last ``\\boxed{...}`` (or ``\\fbox{...}``, or ``\\boxed 5``) in ``text``,
    braces balanced; None when there is none or its braces never close."""
    start = max(text.rfind(tag) for tag in _BOXED)
    if start < 0:
        return None
    i = start + (len("\\boxed") if text.startswith("\\boxed", start) else len("\\fbox"))
    if i < len(text) and text[i] == " ":  # "\boxed 5": up to the next space or $
        rest = text[i + 1 :]
        end = min((k for k in (rest.find("$"), rest.find(" ")) if k >= 0), default=len(rest))
        return rest[:end] or None
    if i >= len(text) or text[i] != "{":
        return None
    depth = 0
    for j in range(i, len(text)):
        depth += {"{": 1, "}": -1}.get(text[j], 0)
        if depth == 0:
            return text[i + 1 : j]
    return None


def gold_latex(answer) -> str:
    """Gold answers come as numbers or strings (MathArena casts them to strings); wrapped in
    ``$...$`` so math-verify parses ``\\frac{1}{2}`` and ``17`` alike."""
    text = str(answer).strip()
    return text if text.startswith("$") else f"${text}$"


@dataclass(frozen=True)
class MathResult:
    reward: float
    detail: str  # "correct", "wrong", "no boxed answer", "timeout", "unparseable", ...


def _worker() -> None:
    """The worker's loop (its main thread): one JSON request per line on stdin, one answer per
    line on stdout. Runs math-verify with its own alarm-based timeouts."""
    from math_verify import parse, verify

    inner = int(os.environ.get("MINTRL_MATH_TIMEOUT", "5"))
    for line in sys.stdin:
        req = json.loads(line)
        try:
            gold = parse(req["gold"], parsing_timeout=inner)
            pred = parse(f"$\\boxed{{{req['answer']}}}$", parsing_timeout=inner)
            if not gold:
                out = {"reward": 0.0, "detail": "gold answer unparseable"}
            elif not pred:
                out = {"reward": 0.0, "detail": "unparseable"}
            else:
                ok = verify(gold, pred, timeout_seconds=inner)
                out = {"reward": float(ok), "detail": "correct" if ok else "wrong"}
        except BaseException as err:  # noqa: BLE001 — TimeoutException is a BaseException
            if isinstance(err, KeyboardInterrupt | SystemExit):
                raise
            out = {"reward": 0.0, "detail": f"error: {type(err).__name__}"}
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()


def _limit_memory(mb: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (mb * 1024 * 1024,) * 2)

    return apply


class MathVerifier:
    """A math-verify worker with a hard time bound per answer. Use as a context manager, or
    call ``close()``. ``check`` may be called from any thread of the caller (the alarm runs
    in the worker's main thread); concurrent calls take turns on the one worker."""

    def __init__(self, timeout_s: float = 10.0, inner_timeout_s: int = 5,
                 memory_mb: int = 4096):
        self.timeout_s, self.inner, self.memory_mb = timeout_s, inner_timeout_s, memory_mb
        self.proc: subprocess.Popen | None = None
        self._lock = threading.Lock()  # one request and its answer at a time on the pipe

    def _start(self) -> subprocess.Popen:
        env = {**os.environ, "MINTRL_MATH_TIMEOUT": str(self.inner)}
        return subprocess.Popen(
            [sys.executable, "-c", "from mintrl.rewards.math_answer import _worker; _worker()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=env, text=True, start_new_session=True,
            preexec_fn=_limit_memory(self.memory_mb))

    def _kill(self) -> None:
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            self.proc = None

    def check(self, response: str, gold) -> MathResult:
        answer = last_boxed(response)
        if answer is None:
            return MathResult(0.0, "no boxed answer")
        with self._lock:
            return self._ask(answer, gold)

    def _ask(self, answer: str, gold) -> MathResult:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = self._start()
        try:
            self.proc.stdin.write(json.dumps({"gold": gold_latex(gold), "answer": answer}) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            self._kill()
            return MathResult(0.0, "error: checker died")
        ready, _, _ = select.select([self.proc.stdout], [], [], self.timeout_s)
        if not ready:
            self._kill()  # stuck where the alarm cannot reach: replaced for the next answer
            return MathResult(0.0, "timeout")
        line = self.proc.stdout.readline()
        if not line:  # died, e.g. out of memory
            self._kill()
            return MathResult(0.0, "error: checker died")
        out = json.loads(line)
        return MathResult(float(out["reward"]), out["detail"])

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)
        self._kill()

    def __enter__(self) -> MathVerifier:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
