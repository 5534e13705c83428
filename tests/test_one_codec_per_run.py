"""One codec construction per run: validated once, built once, passed on.

Every registered codec is built through its :class:`~witprobe.memory.codecs.CodecEntry`, so
counting the entry's calls counts constructions, whichever module asks for one. The tiny Qwen3 of
the zoo (random seeded weights, no download) serves one prompt for one token.
"""

from __future__ import annotations

import pytest

from witprobe.certify import cli
from witprobe.certify.measure import MeasureConfig, measure
from witprobe.memory.codecs import CodecEntry
from witprobe.models.zoo import load_model

PROMPT = "What is the capital of France?"


@pytest.fixture
def constructions(monkeypatch):
    """The names of the codecs built while the test runs, in order."""
    built: list[str] = []
    build = CodecEntry.__call__

    def counting(self, bands):
        built.append(self.name)
        return build(self, bands)

    monkeypatch.setattr(CodecEntry, "__call__", counting)
    return built


@pytest.mark.parametrize("codec", ["int8", "evict-streaming"])
def test_measure_builds_the_codec_once(constructions, codec):
    cfg = MeasureConfig(model="qwen3", codec=codec, max_new_tokens=1, prompts=(PROMPT,), reference=False,
                        box_sup=False)
    run = measure(load_model("qwen3"), cfg)
    assert run.config.codec == codec
    assert constructions == [codec]


def test_certify_run_builds_the_codec_once(constructions, tmp_path):
    code = cli.main(["run", "--model", "qwen3", "--codec", "int8", "--prompt", PROMPT, "--max-new-tokens", "1",
                     "--no-reference", "--box-sup", "off", "--lean", "off", "--coq", "off", "--quiet",
                     "--out", str(tmp_path / "run")])
    assert (tmp_path / "run" / "certificate.json").exists(), code
    assert constructions == ["int8"]
