"""``certify show --format csv|json`` (one row per claim) and ``certify compare A B``, on the
committed artifacts: the rows are the certificate's claims, bounds are never printed below their
exact value, and a certificate that does not re-derive prints every tier as UNVERIFIED (exit 1)."""

from __future__ import annotations

import csv
import io
import json
import shutil
from fractions import Fraction
from pathlib import Path

import pytest

from witprobe.certify.claim_rows import COLUMNS
from witprobe.certify.cli import main

ROOT = Path(__file__).resolve().parents[1]
BASE = ROOT / "artifacts" / "coverage" / "smollm2-int8"
QA = ROOT / "artifacts" / "query_aligned" / "smollm2-int8-qa48"


def _claims(d: Path) -> list[dict]:
    return json.loads((d / "certificate.json").read_text())["claims"]


def test_csv_has_one_row_per_claim_with_bounds_rounded_up(capsys):
    assert main(["show", str(BASE), "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    claims = _claims(BASE)
    assert tuple(rows[0]) == COLUMNS and len(rows) == len(claims)
    for r, c in zip(rows, claims):
        assert r["id"] == c["id"] and r["tier"] == c["tier"] and r["form"] == (c["form"] or "")
        exact = Fraction(r["bound_exact"])
        assert exact == Fraction(c["bound"]["exact"])
        assert Fraction(r["bound_decimal_up"]) >= exact > Fraction(r["bound_decimal_up"]) - Fraction(1, 10**6)
        assert float(r["realized"]) == c["realized_tv_max"]


def test_json_of_an_edited_certificate_is_unverified(tmp_path, capsys):
    d = tmp_path / "run"
    shutil.copytree(BASE, d)
    cert = json.loads((d / "certificate.json").read_text())
    cert["claims"][1]["tier"] = "certified"  # L00.attn_out is empirical: a forged tier
    (d / "certificate.json").write_text(json.dumps(cert))
    assert main(["show", str(d), "--format", "json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["verified"] is False and "claims[1].tier" in out["problems"][0]
    assert {c["tier"] for c in out["claims"]} == {"UNVERIFIED"}


def test_compare_lines_up_the_claims_and_their_differences(capsys):
    assert main(["compare", str(BASE), str(QA)]) == 0
    out = capsys.readouterr().out
    a = {c["id"]: c for c in _claims(BASE)}
    b = {c["id"]: c for c in _claims(QA)}
    assert set(a) == set(b)
    line = next(x for x in out.splitlines() if x.startswith("L13.attn_tv "))
    diff = float(Fraction(b["L13.attn_tv"]["bound"]["exact"]) - Fraction(a["L13.attn_tv"]["bound"]["exact"]))
    assert f"{diff:+.6f}" in line and "certified" in line
    assert sum(x.startswith("L") for x in out.splitlines()) == len(a)


def test_compare_of_a_missing_directory_exits_2_in_one_line(tmp_path, capsys):
    assert main(["compare", str(BASE), str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nope" in err[0]
