"""kvpress presses certified by witprobe, in the environment of ``pip install -e '.[kvpress]'``.

The file is not named ``test_*.py``: the main suite does not collect it. There, transformers is 5.24,
which kvpress 0.5.5 refuses. ``tests/test_kvpress_environment.py`` builds a second virtual
environment with ``pip install -e '.[kvpress]'`` (kvpress 0.5.5, transformers 5.2) and runs this
file in it, explicitly: ``python -m pytest -q -n 0 tests/with_kvpress/kvpress_checks.py``.

What they hold:
- ``certify run --press`` certifies KnormPress and SnapKVPress on SmolLM2 at ratio 0.5, from the
  command line, and ``certify check`` confirms the KnormPress run; the provenance names kvpress's
  own modules and version;
- witprobe evicts exactly the entries kvpress itself evicts (kvpress's own hook on a plain
  ``DynamicCache``), so what is certified is the press, not a re-implementation of it;
- ExpectedAttentionPress runs through the Python API, and every metered bound holds against the
  realized TV; a quantization codec (int4) runs on transformers 5.2 the same way;
- a press witprobe cannot meter (ThinKPress prunes key channels) and a press combined with a
  quantizing codec are refused, exit 2, one line naming why.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from importlib.metadata import version

import pytest
import torch

kvpress = pytest.importorskip("kvpress", reason="runs in the kvpress environment (tests/test_kvpress_environment.py)")

from transformers import DynamicCache  # noqa: E402

from witprobe import observe  # noqa: E402
from witprobe.certify.cli import main  # noqa: E402

# 69 tokens with SmolLM2's tokenizer: longer than SnapKVPress's default observation window (64).
PROMPT = ("Read the following notes and summarize them in two sentences. The team met on Monday to review the "
          "quarterly results. Sales grew in the northern region but fell slightly in the south, where two large "
          "customers delayed their orders. The new product line shipped on time and early reviews are positive. "
          "Support tickets rose after the launch and most were about installation.")


def _certify(tmp_path, press: str, capsys) -> tuple[dict, dict, str]:
    out = tmp_path / "run"
    code = main(["run", "--quiet", "--press", press, "--prompt", PROMPT, "--max-new-tokens", "4", "--out", str(out)])
    printed = capsys.readouterr().out
    assert code in (0, 5), printed  # 5: pass, but the end-to-end readings diverged (eviction at 0.5 may)
    run = json.loads((out / "run.json").read_text())
    cert = json.loads((out / "certificate.json").read_text())
    if "KnormPress" in press:  # certify check re-runs the kernel (about 40 s): once is enough here
        assert main(["check", str(out)]) == 0, capsys.readouterr().out
        capsys.readouterr()
    return run, cert, printed


@pytest.mark.parametrize("press", ["KnormPress", "SnapKVPress"])
def test_certify_run_press_certifies_a_kvpress_press_and_check_confirms(tmp_path, capsys, press):
    run, cert, printed = _certify(tmp_path, f"kvpress:{press}(compression_ratio=0.5)", capsys)
    prov = run["config"]["codec_provenance"]
    assert prov["object"].startswith("kvpress.presses.") and prov["parameters"]["policy"]["press"]["compression_ratio"] == 0.5
    kv = [s for s in prov["sources"] if s["module"].startswith("kvpress.")]
    assert kv and all(s["distribution"] == "kvpress" and s["version"] == version("kvpress") for s in kv)
    evict = [c for c in cert["claims"] if c["kind"] == "evict_tv"]
    assert len(evict) == 30
    for c in evict:  # every eviction bound holds against the realized TV; no NaN anywhere
        realized = c["realized_tv_max"]
        assert math.isfinite(realized) and Fraction(realized) <= Fraction(c["bound"]["exact"]), c["id"]
    assert any(c["tier"] == "certified" for c in evict)  # the kernel decided some of them
    assert all(check["ok"] and check["count"] == 0 for check in cert["self_checks"].values())
    assert "attention TV from eviction" in printed


def _kvpress_kept(model, tok, press) -> list[torch.Tensor]:
    """The keys kvpress's own hook keeps after the prefill, per layer ``(1, Hkv, K, D)``."""
    enc = tok(PROMPT, return_tensors="pt")
    cache = DynamicCache()
    with torch.no_grad(), press(model):
        model(**enc, past_key_values=cache, use_cache=True)
    return [layer.keys for layer in cache.layers], enc


@pytest.mark.parametrize("name", ["KnormPress", "SnapKVPress", "ExpectedAttentionPress"])
def test_witprobe_evicts_exactly_what_kvpress_evicts(smollm2, name):
    model, tok = smollm2.model, smollm2.tokenizer
    press = getattr(kvpress, name)(compression_ratio=0.5)
    kept_by_kvpress, enc = _kvpress_kept(model, tok, press)
    with observe(model, codec=f"kvpress:{name}(compression_ratio=0.5)") as run:
        with torch.no_grad():
            model.generate(**enc, **run.cache_kwargs, max_new_tokens=2, do_sample=False,
                           pad_token_id=tok.eos_token_id)
        layers = run.cache.layers
        readings = run.layers()
    for i, (theirs, ours) in enumerate(zip(kept_by_kvpress, layers)):
        t = enc["input_ids"].shape[1]
        exact = ours.exact_keys[..., :t, :]
        retained = ours.retained[..., :t]
        for h in range(exact.shape[1]):
            # each key kvpress kept is one of the prefill's keys: find which, and compare the index sets
            match = (theirs[0, h].unsqueeze(1) == exact[0, h].unsqueeze(0)).all(-1)  # (K, T)
            assert bool((match.sum(-1) >= 1).all()), (i, h)
            theirs_idx = set(match.float().argmax(-1).tolist())
            ours_idx = set(torch.nonzero(retained[0, h]).flatten().tolist())
            assert theirs_idx == ours_idx, (name, i, h, sorted(theirs_idx ^ ours_idx)[:8])
    for r in readings:  # the metered bounds hold, and none is NaN
        assert r.bound_max is not None and r.tv_realized_max is not None
        assert r.tv_realized_max <= r.bound_max + 1e-12 and r.rows_beaten == 0, r


def test_a_quantization_codec_runs_on_this_transformers(smollm2):
    model, tok = smollm2.model, smollm2.tokenizer
    enc = tok(PROMPT, return_tensors="pt")
    with observe(model, codec="int4") as run:
        with torch.no_grad():
            model.generate(**enc, **run.cache_kwargs, max_new_tokens=2, do_sample=False,
                           pad_token_id=tok.eos_token_id)
        readings = run.layers()
    assert len(readings) == 30
    assert all(0 < r.tv_realized_max <= r.bound_max and r.rows_beaten == 0 for r in readings)


@pytest.mark.parametrize("args, why", [
    (["--press", "kvpress:ThinKPress(key_channel_compression_ratio=0.5)"], "ThinKPress is not a kvpress ScorerPress"),
    (["--press", "kvpress:KnormPress(compression_ratio=0.5)", "--codec", "int4"], "cannot be combined"),
    (["--press", "kvpress:KnormPress(compression_ratio=1.5)"], "Compression ratio must be between 0 and 1"),
    (["--press", "int4"], "names no kvpress press"),
])
def test_presses_witprobe_cannot_meter_are_refused_with_the_reason(tmp_path, capsys, args, why):
    out = tmp_path / "run"
    assert main(["run", "--quiet", *args, "--out", str(out), "--coq", "off", "--lean", "off"]) == 2
    err = capsys.readouterr().err
    assert why in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()


@pytest.mark.parametrize("module, argv", [
    ("witprobe.serving.server", ["--ready-file", "ready"]),  # witprobe serve-loopback
    ("witprobe.serving.openai_server", ["--model", "smollm2"]),  # witprobe serve
    ("witprobe.ledger.cli", ["live"]),  # witprobe ledger live
])
def test_serving_needs_transformers_5_24_and_says_so(tmp_path, capsys, module, argv):
    import importlib

    out = tmp_path / "out"
    main_of = importlib.import_module(module).main
    argv = [str(tmp_path / a) if a == "ready" else a for a in argv]
    assert main_of([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "needs transformers 5.24 (installed: 5.2" in err and "pip install 'witprobe[serve]'" in err, err
    assert len(err.strip().splitlines()) == 1 and not out.exists()
