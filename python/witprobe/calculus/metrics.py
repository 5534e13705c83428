"""Error metrics as types: ``object:metric@site``.

A metric names *what* is measured (the object: a cache ``entry``, the attention ``score`` row,
the attention distribution ``attn_dist``, the selector distribution ``selector_dist``, ...),
*in which unit* (``l2``, ``linf``, ``tv``, ...) and *where* it is observed (``write``, ``read``,
``select``, ...). Two quantities that agree in value but differ in any of the three parts are
different types: contracts compose only when the output metric of one equals the input metric of
the next (paper section 3.1: the observation site is part of the type).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_PART = re.compile(r"^[a-z][a-z0-9_]*$")
_FULL = re.compile(r"^([a-z][a-z0-9_]*):([a-z][a-z0-9_]*)@([a-z][a-z0-9_]*)$")


class MetricError(ValueError):
    """A metric string or part is malformed."""


@dataclass(frozen=True, order=True)
class Metric:
    """One error metric, e.g. ``Metric("entry", "l2", "write")`` written ``entry:l2@write``.

    Parameters
    ----------
    object:
        The object the error is about (``entry``, ``score``, ``attn_dist``, ...).
    metric:
        The unit or distance (``l2``, ``linf``, ``osc``, ``tv``, ...).
    site:
        The observation site (``write``, ``read``, ``select``, ...).
    """

    object: str
    metric: str
    site: str

    def __post_init__(self) -> None:
        for name, part in (("object", self.object), ("metric", self.metric), ("site", self.site)):
            if not isinstance(part, str) or not _PART.match(part):
                raise MetricError(
                    f"metric {name} {part!r} must match [a-z][a-z0-9_]* (lower-case identifier)"
                )

    @classmethod
    def parse(cls, text: str) -> "Metric":
        """Parse ``object:metric@site``; raise :class:`MetricError` naming the problem."""
        if not isinstance(text, str):
            raise MetricError(f"metric must be a string 'object:metric@site', got {type(text).__name__}")
        m = _FULL.match(text)
        if m is None:
            raise MetricError(f"malformed metric {text!r}: expected 'object:metric@site'")
        return cls(m.group(1), m.group(2), m.group(3))

    def __str__(self) -> str:
        return f"{self.object}:{self.metric}@{self.site}"

    @property
    def lean_name(self) -> str:
        """The Lean constructor of ``Witprobe.Metric`` for this metric (lowerCamelCase).

        ``entry:l2@write`` becomes ``entryL2Write``. Only registered metrics that appear in
        Lean-checked chains have a constructor; :mod:`witprobe.calculus.registry` says which.
        """
        words: list[str] = []
        for part in (self.object, self.metric, self.site):
            words.extend(w for w in part.split("_") if w)
        head, *rest = words
        return head + "".join(w[:1].upper() + w[1:] for w in rest)

    @property
    def is_distribution_tv(self) -> bool:
        """Whether values of this metric are total-variation distances (trivially ``<= 1``)."""
        return self.metric == "tv"


def as_metric(value: "Metric | str") -> Metric:
    """Accept a :class:`Metric` or its string form."""
    if isinstance(value, Metric):
        return value
    return Metric.parse(value)
