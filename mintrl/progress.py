"""Progress bars for every long loop (tqdm): live on a terminal; in a log file one plain line
per update, at most every 30 s, with rate and ETA (no carriage-return noise)."""

from __future__ import annotations

import io
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # tqdm loads when a bar is made: `import mintrl` stays standard-library only
    from tqdm import tqdm


# Seconds between progress lines in a log file (MINTRL_PROGRESS_S overrides).
LOG_INTERVAL_S = float(os.environ.get("MINTRL_PROGRESS_S", "30"))


class _Lines(io.TextIOBase):
    """tqdm's output as whole lines: each refresh (``\\r`` + status) becomes one line."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text: str) -> int:
        line = text.replace("\r", "").strip()
        if line:
            self.stream.write(line + "\n")
            self.stream.flush()
        return len(text)

    def flush(self) -> None:
        self.stream.flush()


def quiet_library_bars() -> None:
    """In a log (stderr not a terminal), no bars of transformers or the Hub ("Loading
    weights", "Writing model shards" at every checkpoint: carriage returns and ANSI escapes);
    our own ``progress`` lines say how far a job is. A user's setting wins."""
    if not sys.stderr.isatty():
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


def progress(iterable=None, *, desc: str, total: int | None = None, unit: str = "it",
             disable: bool = False, **kwargs) -> tqdm:
    """``tqdm(iterable)`` with the project's settings: on stderr, refreshed every second on a
    terminal; in a log a new line every ``LOG_INTERVAL_S`` (30 s), and none at all for a loop
    done within 10 s or the interval (a quick call inside an iteration leaves the log alone)."""
    from tqdm import tqdm

    tty = sys.stderr.isatty()
    disable = disable or int(os.environ.get("RANK", "0")) > 0  # one bar per segment, not per rank
    quiet_s = min(10.0, LOG_INTERVAL_S)
    return tqdm(iterable, desc=desc, total=total, unit=unit, disable=disable,
                file=sys.stderr if tty else _Lines(sys.stderr),
                mininterval=1.0 if tty else LOG_INTERVAL_S, delay=0.0 if tty else quiet_s,
                dynamic_ncols=tty, ascii=not tty, **kwargs)
