"""Progress of a run on stderr, drawn by tqdm: a live bar on a terminal; off one (CI logs, pipes)
one line per stage and one line every :data:`LOG_EVERY_S` seconds of generation, never silence:
a request's line comes every :data:`LOG_EVERY_S` seconds even while no token arrives (a long
metered prefill), with the elapsed time, what is done and tqdm's estimate of the time left."""

from __future__ import annotations

import sys
import threading
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
        if self.live or self.quiet:
            return tqdm(total=total, desc=f"[witprobe] {label}", unit="token", disable=self.quiet, leave=False,
                        file=self.stream, dynamic_ncols=True, mininterval=0.1)
        return _Heartbeat(total=total, desc=f"[witprobe] {label}", unit="token", leave=False, file=_Lines(self.stream),
                          dynamic_ncols=False, ascii=True, mininterval=LOG_EVERY_S)


class _Heartbeat(tqdm):
    """Off a terminal: a bar that also prints its line every :data:`LOG_EVERY_S` seconds without an
    update (the first token of a long prompt can take minutes), until it is closed."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._stopped = threading.Event()
        self._beat = threading.Thread(target=self._run, args=(LOG_EVERY_S,), daemon=True)
        self._beat.start()

    def _run(self, every: float) -> None:
        while not self._stopped.wait(max(every, 0.01)):
            self.set_postfix_str("prefill (the prompt's metered forward)" if self.n == 0 else "", refresh=False)
            self.refresh()

    def close(self) -> None:
        stopped = getattr(self, "_stopped", None)
        if stopped is not None:
            stopped.set()
        super().close()


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
