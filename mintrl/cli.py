"""What the command lines share: an error the user can fix is a short message and exit code
2, not a traceback (tracebacks are for bugs)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from mintrl.config.base import ConfigError
from mintrl.sandbox import SandboxUnavailable


class UserError(Exception):
    """Input the user can fix (a missing file, a bad argument): one line, exit code 2."""


# The options most stages share, explained once.
CONFIG_HELP = "the config file (the workflow passes results/config/resolved.yaml)"
RUN_HELP = "run name, as `python -m mintrl.config --check CONFIG` lists them"
TASK_HELP = "task name (a key under `tasks` in the config)"
THREADS_HELP = "torch threads (default: the config's `threads`)"

USER_ERRORS = (UserError, ConfigError, SandboxUnavailable, FileNotFoundError)


def command_line(prog: str, doc: str | None) -> argparse.ArgumentParser:
    """A stage's parser: ``--help`` shows its whole module docstring (what it computes and an
    example command), not a first line cut mid-sentence."""
    return argparse.ArgumentParser(prog=prog, description=doc,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)


def message(err: BaseException) -> str:
    """The one line (a config error: one line per bad key) printed for a user error."""
    if isinstance(err, FileNotFoundError) and err.filename is not None:
        what = err.strerror or "no such file or directory"
        return (f"{err.filename}: {what.lower()} (check the path; in the workflow, the target "
                "that makes it runs first)")
    return str(err)


def run_main(main: Callable[[list[str] | None], object], argv: list[str] | None = None):
    """``main(argv)`` and what it returns; a ``USER_ERRORS`` exception becomes
    ``error: <message>`` on stderr and exit code 2."""
    try:
        return main(argv)
    except USER_ERRORS as err:
        print(f"error: {message(err)}", file=sys.stderr)
        sys.exit(2)
