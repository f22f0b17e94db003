"""A one-line ``Checked 120/5000 files`` counter on stderr, for long runs on a terminal.

Nothing is written unless stderr is a terminal, and nothing before the run has
taken ``delay`` seconds (a fast run stays silent); the line is erased at the
end, so the report below it reads as if it had never been there.
"""

from __future__ import annotations

import time
from typing import TextIO


class Progress:
    def __init__(self, stream: TextIO, *, delay: float = 0.5, interval: float = 0.1, clock=time.monotonic) -> None:
        self.stream = stream
        self.delay = delay
        self.interval = interval
        self.clock = clock
        self.started = clock()
        self.last_shown: float | None = None
        self.width = 0

    @classmethod
    def for_terminal(cls, stream: TextIO) -> Progress | None:
        try:
            return cls(stream) if stream.isatty() else None
        except (AttributeError, ValueError):
            return None

    def __call__(self, done: int, total: int) -> None:
        now = self.clock()
        if now - self.started < self.delay:
            return
        if self.last_shown is not None and now - self.last_shown < self.interval and done < total:
            return
        self.last_shown = now
        text = f"Checked {done}/{total} files"
        self.stream.write("\r" + text.ljust(self.width))
        self.stream.flush()
        self.width = len(text)

    def close(self) -> None:
        if self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0
