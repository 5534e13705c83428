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
