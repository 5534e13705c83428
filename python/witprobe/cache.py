"""The witprobe cache folder (dequantized weights, the built Coq library)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """``$WITPROBE_CACHE``, else ``$XDG_CACHE_HOME/witprobe``, else ``~/.cache/witprobe``."""
    env = os.environ.get("WITPROBE_CACHE")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "witprobe"
