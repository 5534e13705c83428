"""Progress of a run on stderr, drawn by tqdm: a live bar on a terminal; off one (CI logs, pipes)
one line per stage and one line every :data:`LOG_EVERY_S` seconds of generation, never silence."""

from __future__ import annotations

import sys
from typing import Any, TextIO

from tqdm import tqdm

LOG_EVERY_S = 10.0
"""Off a terminal: seconds between two progress lines of one request."""


class _Lines:
    """The stream tqdm draws on off a terminal: each redraw becomes one line (tqdm redraws in place
    with carriage returns, which a log shows as one ever-growing line)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> None:
        line = text.replace("\r", "").rstrip()
        if line:
            self.stream.write(line + "\n")

    def flush(self) -> None:
        self.stream.flush()


class Progress:
    """Where a run reports: :meth:`info` lines and per-request token bars. ``quiet`` silences both."""

    def __init__(self, stream: TextIO | None = None, quiet: bool = False) -> None:
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.live = bool(getattr(self.stream, "isatty", lambda: False)())

    def info(self, msg: str) -> None:
        """One line ``[witprobe] msg`` (above a live bar, which tqdm redraws below it)."""
        if not self.quiet:
            tqdm.write(f"[witprobe] {msg}", file=self.stream)

    def bar(self, label: str, total: int) -> tqdm:
        """A tqdm bar of ``total`` tokens: live and cleared at its end on a terminal, periodic lines off one."""
        return tqdm(total=total, desc=f"[witprobe] {label}", unit="token", disable=self.quiet, leave=False,
                    file=self.stream if self.live else _Lines(self.stream), dynamic_ncols=self.live,
                    ascii=not self.live, mininterval=0.1 if self.live else LOG_EVERY_S)


class TokenProgress:
    """A transformers streamer (``put``/``end``) that advances one request's bar per generated step."""

    def __init__(self, progress: Progress, label: str, total: int) -> None:
        self.bar = progress.bar(label, total)
        self.prompt_seen = False  # the first put() carries the prompt

    def put(self, value: Any) -> None:
        if self.prompt_seen:
            self.bar.update(1)
        self.prompt_seen = True

    def end(self) -> None:
        self.bar.close()
