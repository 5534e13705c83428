"""Variants of committed runs that tests derive from (importable helper, not a test module)."""

from __future__ import annotations

import copy


def without_box(run: dict) -> dict:
    """The run as ``certify run --box-sup off`` records it: no box readings, no shipped box rows,
    so every claim is a chain form (centred on SmolLM2) and has a Lean twin in ``run_real.lean``."""
    run = copy.deepcopy(run)
    run["config"]["box_sup"] = False
    for layer in run["layers"]:
        for k in [k for k in layer["read"] if "boxsup" in k]:
            del layer["read"][k]
        layer.pop("box_rows", None)
    return run
