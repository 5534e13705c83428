"""End to end on SmolLM2 (real weights): `certify run`, the certificate's tiers, `certify check`."""

from __future__ import annotations

import itertools
import copy
import json
import shutil
from pathlib import Path

import pytest

from witprobe.certify import check as check_module
from witprobe.certify.cli import main
from witprobe.certify.derive import derive
from witprobe.formal.lean_runner import find_toolchain
from witprobe.formal.render_coq import render_coq

LEAN, LEAN_WHY = find_toolchain()
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, smollm2):
    out = tmp_path_factory.mktemp("certify") / "smollm2-int8"
    import io
    from contextlib import redirect_stdout

    from witprobe.certify import pipeline

    real = pipeline.coq_check

    def seed(mode, theorems, run_sha, *args, **kwargs):  # the run's own verdict seeds same_file_same_verdict
        outcome = real(mode, theorems, run_sha, *args, **kwargs)
        _KERNEL_VERDICTS[(mode, render_coq(list(theorems), "0" * 64))] = outcome
        return outcome

    buf = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, redirect_stdout(buf):
        mp.setattr(pipeline, "coq_check", seed)
        code = main(["run", "--out", str(out), "--max-new-tokens", "12", "--quiet"])
    return out, code, buf.getvalue()


def test_run_exits_zero_and_writes_the_three_artifacts(run_dir):
    out, code, stdout = run_dir
    assert code == 0, stdout
    for name in ("run.json", "certificate.json", "obligations/run.lean", "obligations/run.v"):
        assert (out / name).is_file(), name
    cert = json.loads((out / "certificate.json").read_text())
    # run_real.lean holds the Lean twins of the chain-form theorems; a run whose every claim is a
    # box claim (Coq only: its checker computes in Coq) has none
    lean = [c for c in cert["claims"] if c["theorem"] and c["theorem"]["lean_statement"]]
    assert (out / "obligations" / "run_real.lean").is_file() == bool(lean)
    assert cert["schema"] == "witprobe-certificate/4"
    assert cert["summary"]["verdict"] == "pass"


def test_self_checks_are_zero_and_no_bound_is_beaten(run_dir):
    out, _, _ = run_dir
    cert = json.loads((out / "certificate.json").read_text())
    assert cert["failures"] == []
    assert {k: v["count"] for k, v in cert["self_checks"].items()} == {k: 0 for k in cert["self_checks"]}
    for c in cert["claims"]:
        for form in c["forms"].values():
            assert not form["beaten_by_realized"]
        assert float(c["bound"]["decimal_up"]) >= c["realized_tv_max"]


def test_int8_certified_bound_is_below_one_on_every_layer_and_plain_form_is_vacuous(run_dir):
    out, _, _ = run_dir
    cert = json.loads((out / "certificate.json").read_text())
    attn = [c for c in cert["claims"] if c["kind"] == "attn_tv"]
    assert len(attn) == 30
    assert all(not c["vacuous"] and float(c["bound"]["decimal_up"]) < 1 for c in attn)
    plain_vacuous = sum(c["forms"]["plain"]["vacuous"] for c in attn)
    assert plain_vacuous >= 15, "the paper's plain form should be vacuous on most layers at int8"
    # the claimed form is the tightest non-vacuous one
    for c in attn:
        bounds = {f: float(v["bound"]["decimal_up"]) for f, v in c["forms"].items() if not v["vacuous"]}
        assert c["form"] == min(bounds, key=bounds.get)


def test_every_layer_claim_is_certified_by_a_coq_theorem_and_lean_arithmetic_does_not_certify(run_dir):
    """The trust chain: each non-vacuous layer claim is certified because Coq's kernel checked the
    theorem stating it; the Lean arithmetic obligations (unchecked here) do not decide the tier."""
    out, _, stdout = run_dir
    cert = json.loads((out / "certificate.json").read_text())
    assert cert["kernels"]["coq"]["status"] == "checked", cert["kernels"]["coq"]
    attn = [c for c in cert["claims"] if c["kind"] == "attn_tv"]
    assert len(attn) == 30
    for c in attn:
        assert c["registered_tier"] == "certified"
        assert c["kernels"]["coq"]["status"] == "kernel_checked", c["kernels"]["coq"]
        assert c["tier"] == "certified" and "kernel-checked by Coq" in c["tier_reason"]
        b_units = next(k["units"] for k in c["theorem"]["constants"] if k["name"] == "B")
        assert c["theorem"]["statement"].rstrip().endswith(f"<= ({b_units} / 281474976710656)")
        assert c["kernels"]["coq"]["guard"]["status"] == "rejected"  # the kernel decided B
        assert c["theorem"]["measured"], "the measured constants (trust boundary) are listed"
        if LEAN is None:
            assert c["kernels"]["lean"]["status"] == "unchecked"  # the Lean theorem: no toolchain here
            # a chain form's arithmetic obligation is unchecked here; the box form has none
            assert c["kernels"]["lean_arithmetic"]["status"] == ("none" if c["form"] == "boxsup" else "unchecked")
    assumptions = set(cert["kernels"]["coq"]["assumptions"])
    assert assumptions and assumptions <= set(cert["assumptions_allowlist"])
    assert "coq: 30/30 kernel-checked" in stdout


def test_table_prints_conservativeness_and_tightness_per_layer(run_dir):
    _, _, stdout = run_dir
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("layer"))
    header = lines[start]
    assert "W/|D|" in header and "tight" in header and "TV real" in header
    rows = list(itertools.takewhile(lambda line: line[:5].strip().isdigit(), lines[start + 2:]))  # after the header and its rule
    assert len(rows) == 30
    for row in rows:
        cols = row.split()
        assert 1.0 <= float(cols[2]) <= 2.0  # W/||Delta|| lies in [1, sqrt(4 bands)]
        assert cols[8] == "-"  # the qa box column: this run stored no query-aligned witness
        assert cols[10] in ("plain", "eform", "centred", "boxsup", "qa_boxsup")  # the claimed form
        assert float(cols[11]) >= 1.0  # tightness = bound / realized


@pytest.mark.skipif(LEAN is not None, reason="a Lean toolchain is present")
def test_lean_required_without_toolchain_exits_3(tmp_path, capsys):
    assert main(["run", "--out", str(tmp_path / "r"), "--lean", "required", "--quiet"]) == 3
    assert "no Lean toolchain" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_usage_errors_exit_2(tmp_path, run_dir, capsys):
    out, _, _ = run_dir
    assert main(["run", "--codec", "int9", "--out", str(tmp_path / "c")]) == 2
    assert "unknown codec 'int9'" in capsys.readouterr().err and not (tmp_path / "c").exists()
    assert main(["run", "--out", str(out), "--quiet"]) == 2
    assert "not empty" in capsys.readouterr().err
    assert main(["run", "--out", str(tmp_path / "x"), "--max-new-tokens", "0", "--quiet"]) == 2
    assert main(["run", "--out", str(tmp_path / "y"), "--bands", "3", "--quiet"]) == 2


def test_check_accepts_the_untouched_run(run_dir, capsys, same_file_same_verdict):
    """``certify check`` re-derives the untouched run; the kernel's verdict on its theorems is the one
    the run itself got (same_file_same_verdict); ``test_frozen_artifacts_re_derive`` and
    ``tests/test_coq_kernel.py`` re-run the kernel in ``check`` for real."""
    out, _, _ = run_dir
    assert main(["check", str(out)]) == 0
    assert "check: ok" in capsys.readouterr().out


def _edit_json(path: Path, edit) -> None:
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data, sort_keys=True, indent=1) + "\n")


EDITS = {
    "run.json: a measured maximum": ("run.json", lambda d: d["layers"][3]["read"]["c_max"].__setitem__("max", d["layers"][3]["read"]["c_max"]["max"] * 1.5), "run.json sha256"),
    "run.json: the codec": ("run.json", lambda d: d["config"].__setitem__("codec", "int4"), "run.json sha256"),
    "run.json: a self-check counter": ("run.json", lambda d: d["layers"][0]["write"].__setitem__("key_viol_witness_below_residual", 1), "self_checks"),
    "certificate.json: a tier": ("certificate.json", lambda d: d["claims"][0].__setitem__("tier", "partial"), "claims[0].tier"),
    "certificate.json: a Coq status": ("certificate.json", lambda d: d["claims"][2]["kernels"]["coq"].__setitem__("status", "rejected"), "claims[2].kernels.coq.status"),
    "certificate.json: a bound": ("certificate.json", lambda d: d["claims"][5]["bound"].__setitem__("decimal_up", "0.010000"), "claims[5].bound.decimal_up"),
    "certificate.json: the Lean reason": ("certificate.json", lambda d: d["kernels"]["lean"].__setitem__("reason", "checked elsewhere"), "kernels.lean.reason"),
    "certificate.json: a Lean theorem status": ("certificate.json", lambda d: d["claims"][1]["kernels"]["lean"].__setitem__("status", "kernel_checked"), "claims[1].kernels.lean.status"),
    "certificate.json: an obligation status": ("certificate.json", lambda d: d["obligations"][0].__setitem__("status", "kernel_checked"), "obligations[0]"),
    "certificate.json: a reading": ("certificate.json", lambda d: d["readings"][2].__setitem__("tv_realized_max", 0.0), "readings[2].tv_realized_max"),
}


_KERNEL_VERDICTS: dict[tuple[str, str], object] = {}


@pytest.fixture
def same_file_same_verdict(monkeypatch):
    """Reuse Coq's verdict on the same theorems within this module.

    The key is the Coq rendering with the run's hash left out: an edit to a ``run.json`` field that
    no theorem states (the codec's name, a self-check counter) changes only the hash, which names
    the Coq module and sits in a comment, and the kernel's verdict on each theorem against the same
    library is the same. So these tests compile each set of theorems once instead of once per edit
    (about a minute each). What they test is the comparison of the stored certificate with the
    re-derived one; ``tests/test_coq_kernel.py`` re-runs the kernel in ``certify check`` for real.
    """
    real = check_module.coq_check

    def memo(mode, theorems, run_sha, *args, **kwargs):
        key = (mode, render_coq(list(theorems), "0" * 64))
        if key not in _KERNEL_VERDICTS:
            _KERNEL_VERDICTS[key] = real(mode, theorems, run_sha, *args, **kwargs)
        return _KERNEL_VERDICTS[key]

    monkeypatch.setattr(check_module, "coq_check", memo)


@pytest.mark.parametrize("what", sorted(EDITS))
def test_check_rejects_single_field_edits(run_dir, tmp_path, capsys, what, same_file_same_verdict):
    out, _, _ = run_dir
    target, edit, expect = EDITS[what]
    copy_dir = tmp_path / "edited"
    shutil.copytree(out, copy_dir)
    _edit_json(copy_dir / target, edit)
    assert main(["check", str(copy_dir)]) == 1
    report = capsys.readouterr().out
    assert "DIFFERS" in report and expect in report, report


def test_check_rejects_an_edited_obligation_file(run_dir, tmp_path, capsys, same_file_same_verdict):
    out, _, _ = run_dir
    copy_dir = tmp_path / "edited"
    shutil.copytree(out, copy_dir)
    lean = copy_dir / "obligations" / "run.lean"
    text = lean.read_text()
    i = text.index("claim := ") + len("claim := ")
    lean.write_text(text[:i] + ("1" if text[i] != "1" else "2") + text[i + 1:])
    assert main(["check", str(copy_dir)]) == 1
    assert "obligations/run.lean differs" in capsys.readouterr().out


def test_derive_fails_a_run_whose_bound_is_beaten(run_dir):
    out, _, _ = run_dir
    run = json.loads((out / "run.json").read_text())
    ok = derive(run)
    assert ok.failures == []
    bad = copy.deepcopy(run)
    bad["layers"][7]["read"]["tv_realized"]["max"] = 0.99
    d = derive(bad)
    assert any("layer 7" in f and "beaten" in f for f in d.failures)
    bad = copy.deepcopy(run)
    bad["layers"][4]["read"]["rows"] = 0
    assert any("layer 4" in f and "coverage" in f for f in derive(bad).failures)


FROZEN = sorted(p.parent for p in (Path(__file__).resolve().parents[1] / "artifacts").glob("**/run.json"))


@pytest.mark.parametrize("art", FROZEN, ids=[p.name for p in FROZEN])
def test_frozen_artifacts_re_derive(art, capsys):
    """Every committed run re-derives byte for byte from its run.json (no model needed)."""
    assert main(["check", str(art)]) == 0, capsys.readouterr().out


def test_the_coverage_table_covers_six_configurations_and_five_families():
    import json

    table = json.loads((Path(__file__).resolve().parents[1] / "artifacts" / "coverage" / "coverage.json").read_text())
    models = {r["model"] for r in table["rows"]}
    assert {"smollm2", "qwen3", "mla", "mla-dsa", "v4", "kda"} <= models
    assert {"plain_kv", "latent_kv", "sparse_selector", "recurrent_state"} <= {
        r["memory_class"] for r in table["rows"]}
    assert all(r["layers_covered"] == r["layers_total"] for r in table["rows"])
    assert set(table["verdicts"].values()) == {"pass"}


def test_box_sup_off_is_recorded_and_must_agree_with_the_layers(run_dir, tmp_path, capsys):
    """`--box-sup off` drops the box form, so each claim falls back to the tightest chain form (never
    tighter than with the box on); the config says the meter was off, and a run whose config and
    layers disagree about the box-sup (either way) fails its derivation."""
    out, _, _ = run_dir
    on = json.loads((out / "run.json").read_text())
    off_dir = tmp_path / "off"
    assert main(["run", "--out", str(off_dir), "--max-new-tokens", "12", "--quiet", "--box-sup", "off",
                 "--coq", "off", "--lean", "off"]) == 0, capsys.readouterr().out
    off = json.loads((off_dir / "run.json").read_text())
    assert off["config"]["box_sup"] is False and "box_sup" not in on["config"]
    assert not any("boxsup_bound" in layer["read"] for layer in off["layers"])
    d_on, d_off = derive(on), derive(off)
    assert d_off.failures == []
    attn_on = {c.id: c for c in d_on.claims if c.kind == "attn_tv"}
    for c in d_off.claims:
        if c.kind == "attn_tv":
            assert "boxsup" not in c.forms and "boxsup" in attn_on[c.id].forms
            assert c.form in ("plain", "eform", "centred") and c.value >= attn_on[c.id].value
            chain = {k: v for k, v in attn_on[c.id].forms.items() if k != "boxsup"}
            assert c.value == min(f.bound for f in chain.values() if f.bound is not None and not f.vacuous)
    lying_on = copy.deepcopy(off)
    del lying_on["config"]["box_sup"]
    assert any("no box-sup bound" in f for f in derive(lying_on).failures)
    lying_off = copy.deepcopy(on)
    lying_off["config"]["box_sup"] = False
    assert any("config says the meter was off" in f for f in derive(lying_off).failures)
