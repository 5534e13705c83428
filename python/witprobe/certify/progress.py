"""Progress on stderr: a live line on a terminal, one line per stage otherwise (CI logs)."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """Minimal progress reporter. ``quiet`` silences everything."""

    def __init__(self, stream: TextIO | None = None, quiet: bool = False) -> None:
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.live = bool(getattr(self.stream, "isatty", lambda: False)())
        self._t0 = time.monotonic()

    def info(self, msg: str) -> None:
        if not self.quiet:
            self._clear()
            print(f"[witprobe] {msg}", file=self.stream, flush=True)

    def update(self, msg: str) -> None:
        """A transient status line (overwritten on a terminal, suppressed in logs)."""
        if not self.quiet and self.live:
            print(f"\r[witprobe] {msg}\033[K", end="", file=self.stream, flush=True)

    def _clear(self) -> None:
        if self.live:
            print("\r\033[K", end="", file=self.stream, flush=True)

    def elapsed(self) -> float:
        return time.monotonic() - self._t0


class TokenProgress:
    """A transformers streamer that reports generated tokens of one request."""

    def __init__(self, progress: Progress, label: str, total: int) -> None:
        self.progress = progress
        self.label = label
        self.total = total
        self.count = -1  # the first put() carries the prompt

    def put(self, value) -> None:  # noqa: ANN001 - transformers streamer protocol
        self.count += 1
        if self.count > 0:
            self.progress.update(f"{self.label}: token {self.count}/{self.total}")

    def end(self) -> None:
        pass
