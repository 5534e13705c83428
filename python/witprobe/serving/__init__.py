"""The ledger inside a real serving engine: transformers continuous batching (paged KV cache).

- :mod:`~witprobe.serving.config`: :class:`LiveConfig`, the knobs of an attached ledger.
- :mod:`~witprobe.serving.attach`: :func:`attach` / :func:`detach` on a
  ``ContinuousBatchingManager`` (or a model); the certified writer writes the paged cache the
  model reads.
- :mod:`~witprobe.serving.live_gate`: the live gate, every criterion re-derived from the journal.
- :mod:`~witprobe.serving.metrics`: per-request verdicts and Prometheus text.
- :mod:`~witprobe.serving.server`: a loopback HTTP server running the engine with the ledger.
- :mod:`~witprobe.serving.live`: ``python -m witprobe.ledger live`` (server + concurrent clients + gate).

This ``__init__`` imports nothing heavy; ``attach`` and ``detach`` load torch on first use.
"""

from __future__ import annotations

from typing import Any


def attach(manager_or_model: Any, *args: Any, **kwargs: Any) -> Any:
    """See :func:`witprobe.serving.attach.attach`."""
    from witprobe.serving.attach import attach as _attach

    return _attach(manager_or_model, *args, **kwargs)


def detach(ledger: Any) -> None:
    """See :func:`witprobe.serving.attach.detach`."""
    from witprobe.serving.attach import detach as _detach

    _detach(ledger)


__all__ = ["attach", "detach"]
