"""Test configuration shared by the suite.

``TRITON_INTERPRET=1`` must be set before any kernel module is imported (Triton reads it when
``@triton.jit`` decorates), so it is set here, at the top of the first file pytest loads.
"""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # noqa: E402
import torch  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

# CI machines are shared and slow: no per-example deadline (timing belongs in bench/, not in tests)
settings.register_profile("witprobe", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("witprobe")

torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))


@pytest.fixture(scope="session")
def smollm2():
    """SmolLM2-135M-Instruct with real weights (loaded once per session, from the witprobe cache)."""
    from witprobe.models.zoo import load_model

    return load_model("smollm2")
