"""Progress of a run (tqdm): periodic lines off a terminal, a live bar on one, nothing when quiet."""

from __future__ import annotations

import io

from witprobe.certify import progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _serve(stream: io.StringIO, tokens: int, quiet: bool = False) -> str:
    p = progress.Progress(stream=stream, quiet=quiet)
    p.info("loading model")
    streamer = progress.TokenProgress(p, "request 1/1", tokens)
    for _ in range(tokens + 1):  # the first put carries the prompt
        streamer.put(None)
    streamer.end()
    p.info(f"request 1/1: 5 prompt tokens, {tokens} generated")
    return stream.getvalue()


def test_off_a_terminal_progress_is_plain_periodic_lines(monkeypatch):
    monkeypatch.setattr(progress, "LOG_EVERY_S", 0.0)  # a line per token instead of one per 10 s
    lines = _serve(io.StringIO(), 3).splitlines()
    assert "\r" not in "".join(lines)
    assert lines[0] == "[witprobe] loading model" and lines[-1] == "[witprobe] request 1/1: 5 prompt tokens, 3 generated"
    bars = lines[1:-1]
    assert bars and all(ln.startswith("[witprobe] request 1/1:") for ln in bars)
    assert "0/3" in bars[0] and "3/3" in bars[-1]


def test_on_a_terminal_the_bar_is_live_and_cleared():
    out = _serve(_Terminal(), 3)
    assert "\r[witprobe] request 1/1:" in out
    assert out.rstrip("\n").endswith("[witprobe] request 1/1: 5 prompt tokens, 3 generated")


def test_quiet_writes_nothing():
    assert _serve(io.StringIO(), 3, quiet=True) == ""
    assert _serve(_Terminal(), 3, quiet=True) == ""


def test_off_a_terminal_a_line_comes_every_interval_without_a_token(monkeypatch):
    """A metered prefill can take minutes before the first token: the log still gets a line each
    interval, saying the prompt's forward is under way and how long it has run."""
    import time

    monkeypatch.setattr(progress, "LOG_EVERY_S", 0.05)
    stream = io.StringIO()
    streamer = progress.TokenProgress(progress.Progress(stream=stream), "request 1/1", 4)
    streamer.put(None)  # the prompt: no token generated yet
    time.sleep(0.5)
    streamer.end()
    lines = [ln for ln in stream.getvalue().splitlines() if "prefill" in ln]
    assert len(lines) >= 3, stream.getvalue()
    assert all(ln.startswith("[witprobe] request 1/1:") and "0/4" in ln for ln in lines)
    n = len(stream.getvalue().splitlines())
    time.sleep(0.2)
    assert len(stream.getvalue().splitlines()) == n  # closed: the heartbeat stopped
