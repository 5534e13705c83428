"""`certify show` and `certify report` never print a certificate `certify check` would refuse as
"certified, pass": one edited so a bound is below its realized value, or a tier or verdict that
the run does not give, is printed NOT VERIFIED (exit 1) with every tier UNVERIFIED; strings from
the certificate reach the terminal escaped."""

from __future__ import annotations

import json
import shutil
from fractions import Fraction
from pathlib import Path

import pytest

from readers_fixture import make_run_dir
from witprobe.calculus import rounding
from witprobe.certify.certificate import canonical_json
from witprobe.certify.cli import main


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    return make_run_dir(tmp_path_factory.mktemp("made") / "run")


@pytest.fixture()
def run_dir(made: Path, tmp_path: Path) -> Path:
    d = tmp_path / "run"
    shutil.copytree(made, d)
    return d


def _edit(run_dir: Path, change) -> None:
    p = run_dir / "certificate.json"
    cert = json.loads(p.read_text())
    change(cert)
    p.write_text(canonical_json(cert))


def _bound_below_realized(cert: dict) -> None:
    """The reported forgery: layer 3's bound set to half its realized TV (decimal consistent)."""
    c = next(c for c in cert["claims"] if c["id"] == "L03.attn_tv")
    low = Fraction(c["realized_tv_max"]) / 2
    c["bound"] = {"exact": rounding.fraction_text(low), "decimal_up": rounding.decimal_up(low, 6)}
    c["tightness"] = 0.5


def test_show_prints_a_consistent_certificate_as_verified(run_dir, capsys):
    assert main(["show", str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert "verdict: pass" in out and "NOT VERIFIED" not in out
    assert "verified: re-derived from run.json (kernel outcomes as recorded" in out


def test_show_marks_a_bound_below_its_realized_value(run_dir, capsys):
    _edit(run_dir, _bound_below_realized)
    assert main(["show", str(run_dir)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("NOT VERIFIED: claims[")
    assert "(L03.attn_tv) bound" in out and "is below its realized value" in out
    assert "verdict: NOT VERIFIED" in out and "verdict: pass" not in out
    rows = [ln for ln in out.splitlines() if ln[:5].strip().isdigit()]
    assert rows and all(ln.rstrip().endswith("UNVERIFIED") for ln in rows)
    assert " empirical" not in "\n".join(rows) and " certified" not in "\n".join(rows)


def test_show_marks_an_edited_tier_and_verdict(run_dir, capsys):
    def promote(cert: dict) -> None:  # empirical claims relabelled certified; a failed verdict relabelled pass
        for c in cert["claims"]:
            c["tier"] = "certified"

    _edit(run_dir, promote)
    assert main(["show", str(run_dir)]) == 1
    out = capsys.readouterr().out
    assert "NOT VERIFIED: certificate.json is not the certificate re-derived from run.json, at: claims[0].tier" in out
    assert "verdict: pass" not in out


def test_show_marks_a_missing_run_json(run_dir, capsys):
    (run_dir / "run.json").unlink()
    assert main(["show", str(run_dir)]) == 1
    assert "NOT VERIFIED: run.json is missing" in capsys.readouterr().out


def test_compare_marks_a_missing_run_json(run_dir, tmp_path, capsys):
    other = tmp_path / "other"
    shutil.copytree(run_dir, other)
    (run_dir / "run.json").unlink()
    assert main(["compare", str(run_dir), str(other)]) == 1
    assert f"NOT VERIFIED: {run_dir}: run.json is missing" in capsys.readouterr().out


def test_report_marks_a_bound_below_its_realized_value(run_dir, tmp_path, capsys):
    _edit(run_dir, _bound_below_realized)
    page_path = tmp_path / "page.html"
    assert main(["report", str(run_dir), "--out", str(page_path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"wrote {page_path}" and out[1].startswith("NOT VERIFIED: claims[")
    page = page_path.read_text()
    assert '<div class="verdict fail" id="verdict">NOT VERIFIED' in page
    assert 'class="verdict pass"' not in page and "verdict: pass" not in page
    assert "tier tier-certified" not in page and "tier tier-empirical" not in page and "tier tier-UNVERIFIED" in page
    assert "is below its realized value" in page


def test_report_of_a_consistent_certificate_is_verified(run_dir, tmp_path, capsys):
    assert main(["report", str(run_dir), "--out", str(tmp_path / "page.html")]) == 0
    page = (tmp_path / "page.html").read_text()
    assert 'class="verdict pass"' in page and "NOT VERIFIED" not in page and "kernel outcomes as recorded" in page


def test_show_escapes_control_characters(run_dir, capsys):
    def evil(cert: dict) -> None:
        cert["coverage"][0]["model"] = "\x1b[2J\x1b]0;owned\x07smol\u202elm"

    _edit(run_dir, evil)
    assert main(["show", str(run_dir)]) == 1
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert "\\x1b[2J\\x1b]0;owned\\x07smol\\u202elm" in out
