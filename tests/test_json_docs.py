"""docs/JSON.md documents every key of the committed artifact's run.json and certificate.json
(top level, layers[i], requests[i], claims[i], summary), so the document cannot silently drift."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ARTIFACT = ROOT / "artifacts" / "coverage" / "smollm2-int8"


def _section(name: str) -> set[str]:
    text = (ROOT / "docs" / "JSON.md").read_text(encoding="utf-8")
    body = text.split(f"## {name}", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"`([A-Za-z_0-9]+)`", body))


def _objects() -> dict[str, tuple[str, dict]]:
    run = json.loads((ARTIFACT / "run.json").read_text())
    cert = json.loads((ARTIFACT / "certificate.json").read_text())
    keys: dict[str, tuple[str, dict]] = {"run.json": ("run.json", run), "certificate.json": ("certificate.json", cert)}
    for i, layer in enumerate(run["layers"]):
        keys[f"run.json layers[{i}]"] = ("run.json", layer)
    for i, r in enumerate(run["requests"]):
        keys[f"run.json requests[{i}]"] = ("run.json", r)
    for i, c in enumerate(cert["claims"]):
        keys[f"certificate.json claims[{i}]"] = ("certificate.json", c)
    keys["certificate.json summary"] = ("certificate.json", cert["summary"])
    keys["certificate.json summary.end_to_end"] = ("certificate.json", cert["summary"]["end_to_end"])
    return keys


@pytest.mark.parametrize("where", ["run.json", "certificate.json", "run.json layers[0]", "run.json requests[0]",
                                   "certificate.json claims[0]", "certificate.json summary",
                                   "certificate.json summary.end_to_end"])
def test_every_key_is_documented(where):
    objs = _objects()
    file_, obj = objs[where]
    documented = _section(file_)
    missing = sorted(k for k in obj if k not in documented)
    assert not missing, f"{where} keys missing from docs/JSON.md: {missing}"


def test_every_claim_and_layer_has_the_documented_keys():
    objs = _objects()
    for where, (file_, obj) in objs.items():
        missing = sorted(k for k in obj if k not in _section(file_))
        assert not missing, f"{where} keys missing from docs/JSON.md: {missing}"
