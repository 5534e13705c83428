"""Which positions of a left-padded batch are real, step by step of ``generate``.

:class:`PaddingStreamer` is passed to ``model.generate(streamer=...)``: after each step it tells
the observer which requests are still alive (have not emitted an end-of-sequence token), so the
positions ``generate`` keeps filling after a request's end are left out of the meters, as in
that request's own run (:meth:`witprobe.probe.observer.Observer.extend_padding`). ``on_put``,
when given, also receives every step's tokens (a progress display).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


def eos_ids(model: Any) -> list[int]:
    """The model's end-of-sequence token ids (its generation config's ``eos_token_id``)."""
    eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    return [] if eos is None else [int(e) for e in (eos if isinstance(eos, (list, tuple)) else [eos])]


class PaddingStreamer:
    """A ``generate`` streamer that extends the observer's padding mask by one position per step
    (``alive`` ``(B,)``: the request has not ended, so its new token is real)."""

    def __init__(self, observer: Any, eos: list[int], on_put: Callable[[torch.Tensor], None] | None = None,
                 on_end: Callable[[], None] | None = None) -> None:
        self.observer = observer
        self.eos = torch.tensor(eos or [-1], dtype=torch.long)
        self.on_put, self.on_end = on_put, on_end
        self.alive: torch.Tensor | None = None

    def put(self, value: torch.Tensor) -> None:
        if self.on_put is not None:
            self.on_put(value)
        if self.alive is None:  # the first call carries the prompt
            self.alive = torch.ones(value.shape[0], dtype=torch.bool)
            return
        self.alive = self.alive & ~torch.isin(value.reshape(-1).long().cpu(), self.eos)
        self.observer.extend_padding(self.alive)

    def end(self) -> None:
        if self.on_end is not None:
            self.on_end()
