"""What the stages' command lines share: an error the user can fix is one line and exit
code 2, not a traceback (tracebacks are for bugs)."""

from __future__ import annotations

import sys
from collections.abc import Callable

from mintrl.sandbox import SandboxUnavailable

USER_ERRORS = (SandboxUnavailable,)


def run_main(main: Callable[[list[str] | None], None], argv: list[str] | None = None) -> None:
    """``main(argv)``; a ``USER_ERRORS`` exception becomes ``error: <message>``, exit 2."""
    try:
        main(argv)
    except USER_ERRORS as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
