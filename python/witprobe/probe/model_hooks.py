"""Forward hooks a measurement installs on a model and removes again: the base of the hook sets.

Each hook set (the DSA indexer's :class:`~witprobe.probe.selector.SelectorHooks`, DeepSeek-V4's page
indexers, Kimi-Linear's forget gates, a kvpress press's prefill scorer) holds the observer it
reports to and the handles of the hooks it registered; :meth:`ModelHooks.install` hooks the model
and returns how many modules it found, :meth:`ModelHooks.remove` takes every hook off again.
"""

from __future__ import annotations

from typing import Any

from torch import nn


class ModelHooks:
    """The handles of the forward hooks one measurement put on a model (module docstring)."""

    def __init__(self, observer: Any) -> None:  # witprobe.probe.observer.Observer
        self.observer = observer
        self.handles: list = []

    def install(self, model: nn.Module) -> int:
        """Hook ``model``; the number of modules found."""
        raise NotImplementedError

    def remove(self) -> None:
        """Take every hook off the model."""
        for h in self.handles:
            h.remove()
        self.handles.clear()
