"""Fixtures for the model zoo tests: each tiny model is built once per session."""

from __future__ import annotations

import pytest
import torch

from witprobe.models.loaded import LoadedModel
from witprobe.models.zoo import load_model


TINY = ("qwen3", "mla", "mla-dsa", "v4", "kda")


@pytest.fixture(scope="session")
def tiny_models() -> dict[str, LoadedModel]:
    """Lazily loaded tiny models, keyed by zoo name."""
    cache: dict[str, LoadedModel] = {}

    class Lazy(dict):
        def __missing__(self, name: str) -> LoadedModel:
            cache[name] = load_model(name)
            self[name] = cache[name]
            return cache[name]

    return Lazy()


@pytest.fixture(scope="session")
def prompt_ids() -> torch.Tensor:
    """A fixed 64-token prompt (SmolLM2 vocabulary), shape ``(1, 64)``."""
    from witprobe.models.smollm2 import load_tokenizer

    tok = load_tokenizer(chat_template=False)
    text = (
        "The keeper climbed the spiral stairs every evening, trimmed the wick, polished the lens and wound "
        "the clockwork that turned the light. In the morning he wrote the weather, the ships and the birds "
        "into his logbook, and once a month the supply boat brought flour, oil and old newspapers. When the "
        "lamp was finally replaced by an automatic beacon, his logbooks went to a museum in the town."
    )
    ids = tok(text, return_tensors="pt").input_ids[:, :64]
    assert ids.shape == (1, 64)
    return ids
