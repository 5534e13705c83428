"""The installed transformers release, and the parts of witprobe that need a newer one.

witprobe's measurement path (the Cache API's layers, ``AttentionInterface``, the eager mask, greedy
generation) runs on transformers 5.2 through 5.24. kvpress 0.5.5 declares ``transformers<5.3``, so
an environment with the ``kvpress`` extra has 5.2.x, and everything below is what such an
environment cannot do. Those parts import their transformers classes when they are used, through
:func:`import_for` (or :func:`optional_import` where no layer needs them), so that a missing class
is one line naming the part and the release it needs, never an ``ImportError`` at start-up.

- continuous batching and ``transformers serve`` (``witprobe serve``, ``serve-loopback``,
  ``ledger live``): 5.24 (the ``serve`` extra pins it), checked before anything is written
  (:func:`continuous_batching_missing`);
- the zoo's DeepSeek-V4 (``--model v4``), DeepSeek-V3.2 (``mla-dsa``) and Kimi-Linear (``kda``)
  configurations: the releases that added those model types.
"""

from __future__ import annotations

import importlib
import inspect
from types import ModuleType
from typing import Any

from witprobe.models.loaded import ModelError

CONTINUOUS_BATCHING = "continuous batching (witprobe serve, serve-loopback, ledger live)"

FULL_RELEASE = "5.24"
"""The transformers release every part of witprobe is tested on (``pip install 'witprobe[serve]'``)."""


class TransformersReleaseError(ModelError):
    """A part of witprobe that the installed transformers release cannot run."""


def installed() -> str:
    """The installed transformers version string (e.g. ``"5.2.0"``)."""
    import transformers

    return transformers.__version__


def import_for(part: str, module: str, attr: str | None = None) -> Any:
    """``module`` (or its attribute ``attr``) for ``part``, or :class:`TransformersReleaseError`
    naming the part, the installed release and what is missing."""
    try:
        mod = importlib.import_module(module)
        return mod if attr is None else getattr(mod, attr)
    except (ImportError, AttributeError) as e:
        raise TransformersReleaseError(
            f"{part} needs transformers {FULL_RELEASE} (installed: {installed()}; {e}); "
            f"install it with: pip install 'witprobe[serve]'") from None


def continuous_batching_missing() -> str | None:
    """Why the installed transformers cannot run continuous batching (``witprobe serve``,
    ``serve-loopback``, ``ledger live``), or ``None`` when it can: checked before anything is written."""
    try:
        import_for(CONTINUOUS_BATCHING, "transformers.generation.configuration_utils", "ContinuousBatchingConfig")
    except TransformersReleaseError as e:
        return str(e)
    return None


def optional_import(module: str) -> ModuleType | None:
    """Import ``module``, or ``None`` when the installed transformers lacks what it imports: for parts
    no layer of the model needs (a model that needs them cannot be loaded by that release either)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        return None


def cache_kwarg(model: Any) -> str:
    """The keyword ``model``'s forward takes its cache by: ``"cache"`` (transformers 5.24) or
    ``"past_key_values"`` (5.2, and the name kvpress's hooks read)."""
    params = inspect.signature(model.forward).parameters
    for name in ("cache", "past_key_values"):
        if name in params:
            return name
    raise TransformersReleaseError(f"{type(model).__name__}.forward takes no cache argument (neither 'cache' "
                                   "nor 'past_key_values')")
