"""What every model loader returns (:class:`LoadedModel`) and raises (:class:`ModelError`).

The zoo (:mod:`witprobe.models.zoo`) and the loaders it dispatches to (``smollm2``, ``tiny``,
``mla_smollm2``, ``local``) both import these; neither imports the other's module for them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class ModelError(RuntimeError):
    """A model cannot be loaded (the message says what to install or fix)."""


@dataclass
class LoadedModel:
    """A model ready to run: the torch module, its tokenizer (or None) and provenance."""

    name: str
    model: Any
    tokenizer: Any
    provenance: dict[str, Any] = field(default_factory=dict)
    family: str = ""  # for a model outside the zoo (a zoo model's family is its ModelSpec's)
    memory_class: str = ""
