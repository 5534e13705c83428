"""``certify run --press`` and the transformers-release seams, in the main environment (no kvpress).

The presses themselves are certified in the kvpress environment (tests/test_kvpress_environment.py);
here: what a user without kvpress, or with a wrong spelling, is told, and the helpers that let the
measurement path run on transformers 5.2 and 5.24.
"""

from __future__ import annotations

import importlib.util

import pytest

from witprobe.certify.cli import main
from witprobe.models.transformers_release import TransformersReleaseError, cache_kwarg, import_for, optional_import


@pytest.mark.skipif(importlib.util.find_spec("kvpress") is not None, reason="kvpress is installed here")
def test_press_without_kvpress_installed_is_one_line_naming_the_import(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", "--press", "kvpress:KnormPress(compression_ratio=0.5)", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "cannot import kvpress" in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()


@pytest.mark.parametrize("args, says", [
    (["--press", "kvpress:KnormPress(compression_ratio=0.5)", "--codec", "int8"], "cannot be combined"),
    (["--press", "int4"], "--press int4 names no kvpress press"),
])
def test_press_spellings_witprobe_refuses(tmp_path, capsys, args, says):
    out = tmp_path / "run"
    assert main(["run", *args, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert says in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()


def test_import_for_names_the_part_the_release_and_the_extra():
    with pytest.raises(TransformersReleaseError) as e:
        import_for("continuous batching (witprobe serve)", "transformers", "NoSuchClassAnywhere")
    msg = str(e.value)
    assert msg.startswith("continuous batching (witprobe serve) needs transformers 5.24 (installed: ")
    assert "pip install 'witprobe[serve]'" in msg
    assert optional_import("transformers.no_such_module_here") is None
    assert optional_import("transformers.cache_utils") is not None


def test_cache_kwarg_follows_the_models_forward():
    class New:
        def forward(self, input_ids=None, cache=None):
            pass

    class Old:
        def forward(self, input_ids=None, past_key_values=None):
            pass

    class Neither:
        def forward(self, input_ids=None):
            pass

    assert cache_kwarg(New()) == "cache" and cache_kwarg(Old()) == "past_key_values"
    with pytest.raises(TransformersReleaseError, match="takes no cache argument"):
        cache_kwarg(Neither())


class ScorerPress:
    """Stands in for kvpress's ``ScorerPress``: witprobe recognizes a press by the module and name
    of the classes it inherits from, so this needs no kvpress."""

    compression_ratio = 0.5

    def compress(self, *args):
        raise AssertionError("witprobe keeps entries by score itself")

    def forward_hook(self, *args):
        raise AssertionError("witprobe installs its own hooks")


ScorerPress.__module__ = "kvpress.presses.scorer_press"


def test_a_press_that_never_scored_the_prefill_evicts_nothing_and_says_why():
    """Fail closed: without the press's hooks on the model, the first decode write refuses to
    evict on votes that were never cast (instead of keeping the top of all-zero scores)."""
    import torch

    from witprobe.memory.codec_base import CodecError
    from witprobe.memory.press import press_codec
    from witprobe.probe.observer import Observer
    from witprobe.probe.witness_cache import WitnessCache

    codec = press_codec(ScorerPress(), "scorerpress")
    obs = Observer(1)
    layer = obs.attach(WitnessCache.for_dense_kv(1, codec, codec, 4, obs)).layers[0]
    with torch.no_grad(), obs.active():
        layer.update(torch.randn(1, 2, 8, 16), torch.randn(1, 2, 8, 16))
        with pytest.raises(CodecError, match="never scored the prefill"):
            layer.update(torch.randn(1, 2, 1, 16), torch.randn(1, 2, 1, 16))
        layer.votes = torch.arange(8, dtype=torch.float64).expand(1, 2, 8).clone()  # what the hooks would store
        layer.press_scored, layer.compressed = True, False
        layer.update(torch.randn(1, 2, 1, 16), torch.randn(1, 2, 1, 16))
    assert layer.retained[0, :, :8].tolist() == [[False] * 4 + [True] * 4] * 2  # the top 4 of 8 by score
