"""Kernel tests need the optional ``triton`` dependency; they skip with the reason without it."""

from __future__ import annotations

import pytest

pytest.importorskip("triton", reason="the kernel equivalence tests need the optional dependency triton")
