"""The attention function continuous batching calls, as one overridable entry.

transformers looks the function up at every call in ``ALL_ATTENTION_FUNCTIONS`` under the model's
``attn_implementation`` (``"paged|eager"`` on the CPU). An override is a *local* entry of that
shared ``AttentionInterface`` instance (transformers' own mechanism for overriding a function),
removed again by :func:`restore`, so the global registry is never changed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: The attention implementation continuous batching uses on the CPU.
PAGED_ATTENTION = "paged|eager"


class OverrideOrderError(RuntimeError):
    """An override was restored while a newer one is still installed."""


@dataclass(frozen=True)
class Override:
    """What :func:`override` replaced (whether a local entry existed, and which) and what it installed."""

    had_local: bool
    old_local: Any
    installed: Any


def current() -> Callable[..., Any]:
    """The function the engine calls now."""
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    return ALL_ATTENTION_FUNCTIONS[PAGED_ATTENTION]


def override(fn: Callable[..., Any]) -> Override:
    """Make ``fn`` the engine's attention function; returns what :func:`restore` needs."""
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    fns = ALL_ATTENTION_FUNCTIONS
    saved = Override(PAGED_ATTENTION in fns._local_mapping, fns._local_mapping.get(PAGED_ATTENTION), fn)
    fns[PAGED_ATTENTION] = fn
    return saved


def restore(saved: Override) -> None:
    """Undo one :func:`override`. Overrides nest: restoring out of order would silently reinstate a
    function someone else removed, so it raises :class:`OverrideOrderError` and changes nothing."""
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    if ALL_ATTENTION_FUNCTIONS._local_mapping.get(PAGED_ATTENTION) is not saved.installed:
        raise OverrideOrderError("attention function overrides restored out of order: restore the newest first")
    if saved.had_local:
        ALL_ATTENTION_FUNCTIONS[PAGED_ATTENTION] = saved.old_local
    else:
        del ALL_ATTENTION_FUNCTIONS[PAGED_ATTENTION]
