"""The typed run record: every committed run.json parses and round-trips, the committed JSON Schema
is the one generated from the types, a change of the types forces a schema version bump, and
malformed records fail with the JSON path of the problem (in our decoder and in an independent
JSON Schema validator alike)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from witprobe.certify.derive import DeriveError, derive
from witprobe.certify.run_record import (READABLE_SCHEMAS, RUN_SCHEMA, SCHEMA_FINGERPRINTS, RunRecord, Statistic,
                                         parse_run, run_schema, schema_fingerprint, schema_text)
from witprobe.typed_json import RecordError

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = sorted(ROOT.glob("artifacts/**/run.json")) + [ROOT / "tests" / "data" / "golden" / "run.json"]
SCHEMA_FILE = ROOT / "docs" / "schema" / "run.schema.json"
SMOL = ROOT / "artifacts" / "coverage" / "smollm2-int8" / "run.json"


def _load(p: Path) -> dict:
    return json.loads(p.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_committed_run_parses_typed_and_round_trips_exactly(path):
    obj = _load(path)
    run = parse_run(obj)
    assert isinstance(run, RunRecord) and obj["schema"] in READABLE_SCHEMAS
    assert run.to_json() == obj  # the types lose nothing
    stats = [v for layer in run.layers for v in (*layer.read.values(), *layer.write.values())]
    assert any(isinstance(v, Statistic) for v in stats) and all(isinstance(v, (Statistic, int)) for v in stats)


@pytest.mark.parametrize("path", [p for p in COMMITTED if _load(p)["schema"] == RUN_SCHEMA],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_every_current_run_validates_against_the_committed_json_schema(path):
    validator = jsonschema.Draft202012Validator(_load(SCHEMA_FILE))
    errors = [e.message for e in validator.iter_errors(_load(path))]
    assert errors == []


def test_the_committed_schema_is_the_one_generated_from_the_types():
    assert SCHEMA_FILE.read_text(encoding="utf-8") == schema_text(), (
        "docs/schema/run.schema.json is stale: python -m witprobe.certify schema --out docs/schema/run.schema.json")
    jsonschema.Draft202012Validator.check_schema(run_schema())


def test_a_change_of_the_types_needs_a_schema_version_bump():
    """Renaming, adding or retyping a field changes the generated schema; its fingerprint is pinned
    per version, so the change cannot land without bumping RUN_SCHEMA (and keeping the old version
    in READABLE_SCHEMAS so `certify check` still reads the committed artifacts)."""
    assert SCHEMA_FINGERPRINTS.get(RUN_SCHEMA) == schema_fingerprint(), (
        "the run record's types changed: bump RUN_SCHEMA, keep the old one readable, record the new fingerprint")
    assert set(READABLE_SCHEMAS) >= {"witprobe-run/1", "witprobe-run/2", RUN_SCHEMA}


def _mutations(obj: dict):
    """(description, mutated record, expected path in the error)."""
    def m(fn):
        o = copy.deepcopy(obj)
        fn(o)
        return o

    yield "renamed field", m(lambda o: o["config"].__setitem__("band_count", o["config"].pop("bands"))), "config"
    yield "missing field", m(lambda o: o["model"].pop("head_dim")), "model.head_dim"
    yield "counter as a float", m(lambda o: o["layers"][3]["read"].__setitem__("rows_plain_beaten", 0.5)), \
        "layers[3].read.rows_plain_beaten"
    yield "negative self-check count", m(lambda o: o["layers"][2]["write"].__setitem__(
        "key_viol_witness_below_residual", -1)), "layers[2].write.key_viol_witness_below_residual"
    yield "self-check recorded as a statistic", m(lambda o: o["layers"][1]["read"].__setitem__(
        "rows_boxsup_beaten", o["layers"][1]["read"]["tv_realized"])), "layers[1].read.rows_boxsup_beaten"
    yield "statistic without its maximum", m(lambda o: o["layers"][0]["read"]["c_max"].pop("max")), \
        "layers[0].read.c_max"
    yield "unknown statistic field", m(lambda o: o["layers"][0]["read"]["c_max"].__setitem__("p99", 1.0)), \
        "layers[0].read.c_max"
    yield "boolean as a count", m(lambda o: o["layers"][0]["read"].__setitem__("rows", True)), "layers[0].read.rows"
    yield "string token", m(lambda o: o["requests"][0]["served_tokens"].__setitem__(0, "the")), \
        "requests[0].served_tokens[0]"
    yield "null optional field", m(lambda o: o["config"].__setitem__("batch", None)), "config.batch"


@pytest.mark.parametrize("desc, bad, where", list(_mutations(_load(SMOL))), ids=lambda x: x if isinstance(x, str) else "")
def test_malformed_records_fail_with_the_path_in_both_validators(desc, bad, where):
    with pytest.raises(RecordError) as e:
        parse_run(bad)
    assert f"run.json.{where}" in str(e.value), (desc, str(e.value))
    with pytest.raises(DeriveError, match=where.replace("[", r"\[").replace("]", r"\]")):
        derive(bad)
    assert list(jsonschema.Draft202012Validator(_load(SCHEMA_FILE)).iter_errors(bad)), desc


def test_layer_index_and_schema_version_are_checked():
    obj = _load(SMOL)
    bad = copy.deepcopy(obj)
    bad["layers"][4]["layer"] = 5
    with pytest.raises(RecordError, match=r"layers\[4\]\.layer: expected 4"):
        parse_run(bad)
    bad = copy.deepcopy(obj)
    bad["schema"] = "witprobe-run/9"
    with pytest.raises(RecordError, match="witprobe-run/9"):
        parse_run(bad)


def test_certify_schema_prints_the_committed_schema_and_refuses_a_directory(tmp_path):
    out = subprocess.run([sys.executable, "-m", "witprobe.certify", "schema"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout == SCHEMA_FILE.read_text(encoding="utf-8")
    bad = subprocess.run([sys.executable, "-m", "witprobe.certify", "schema", "--out", str(tmp_path)],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "is a directory" in bad.stderr
    assert list(tmp_path.iterdir()) == []


def test_certify_check_names_a_renamed_field(tmp_path):
    d = tmp_path / "run"
    src = SMOL.parent
    d.mkdir()
    for p in src.rglob("*"):
        if p.is_file():
            (d / p.relative_to(src)).parent.mkdir(parents=True, exist_ok=True)
            (d / p.relative_to(src)).write_bytes(p.read_bytes())
    obj = _load(d / "run.json")
    obj["layers"][0]["host_read_call"] = obj["layers"][0].pop("host_read_calls")
    (d / "run.json").write_text(json.dumps(obj), encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "witprobe.certify", "check", str(d)], capture_output=True, text=True)
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and "layers[0]" in r.stderr and "host_read_call" in r.stderr, r.stderr


# ---------------------------------------------------------------------------- certificate.json

from witprobe.certify import certificate_record as cr  # noqa: E402

CERTS = sorted(ROOT.glob("artifacts/**/certificate.json"))
CERT_SCHEMA_FILE = ROOT / "docs" / "schema" / "certificate.schema.json"


@pytest.mark.parametrize("path", CERTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_committed_certificate_parses_typed_and_validates(path):
    obj = _load(path)
    cert = cr.parse_certificate(obj)
    assert cert.to_json() == obj
    assert {type(c.extra).__name__ for c in cert.claims} <= {t.__name__ for t in cr.extra_types().values()}
    assert [e.message for e in jsonschema.Draft202012Validator(_load(CERT_SCHEMA_FILE)).iter_errors(obj)] == []


def test_the_committed_certificate_schema_is_generated_and_pinned():
    assert CERT_SCHEMA_FILE.read_text(encoding="utf-8") == cr.schema_text(), (
        "docs/schema/certificate.schema.json is stale: python -m witprobe.certify schema --certificate --out ...")
    assert cr.SCHEMA_FINGERPRINTS.get(cr.CERT_SCHEMA) == cr.schema_fingerprint(), (
        "the certificate's types changed: bump CERT_SCHEMA and record the new fingerprint")
    out = subprocess.run([sys.executable, "-m", "witprobe.certify", "schema", "--certificate"], capture_output=True,
                         text=True)
    assert out.returncode == 0 and out.stdout == CERT_SCHEMA_FILE.read_text(encoding="utf-8")


def _cert_mutations(obj: dict):
    def m(fn):
        o = copy.deepcopy(obj)
        fn(o)
        return o

    yield "claim extra of another kind", m(lambda o: o["claims"][1]["extra"].__setitem__("rho", "1")), "claims[1].extra"
    yield "unknown claim kind", m(lambda o: o["claims"][0].__setitem__("kind", "attn_tvv")), "claims[0].kind"
    yield "tier missing", m(lambda o: o["claims"][0].pop("tier")), "claims[0]"
    yield "self-check count as a string", m(lambda o: next(iter(o["self_checks"].values())).__setitem__("count", "0")), \
        "self_checks."
    yield "bound without its exact value", m(lambda o: o["claims"][0]["bound"].pop("exact")), "claims[0].bound"


@pytest.mark.parametrize("desc, bad, where", list(_cert_mutations(_load(SMOL.parent / "certificate.json"))),
                         ids=lambda x: x if isinstance(x, str) else "")
def test_malformed_certificates_fail_with_the_path_in_both_validators(desc, bad, where):
    with pytest.raises(RecordError) as e:
        cr.parse_certificate(bad)
    assert f"certificate.json.{where}" in str(e.value), (desc, str(e.value))
    assert list(jsonschema.Draft202012Validator(_load(CERT_SCHEMA_FILE)).iter_errors(bad)), desc


def test_show_refuses_a_certificate_with_a_malformed_claim_in_one_line(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    obj = _load(SMOL.parent / "certificate.json")
    obj["claims"][2]["extra"]["tv_term"] = 0.5  # an output claim's rounded-up term must be exact text
    (d / "certificate.json").write_text(json.dumps(obj), encoding="utf-8")
    r = subprocess.run([sys.executable, "-m", "witprobe.certify", "show", str(d)], capture_output=True, text=True)
    assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1, r.stderr
    assert "claims[2].extra.tv_term" in r.stderr


@pytest.mark.parametrize("bad", [[], "run", 3, None])
def test_a_record_that_is_not_an_object_is_refused_by_name(bad):
    with pytest.raises(RecordError, match="run.json: expected an object"):
        parse_run(bad)
    with pytest.raises(DeriveError, match="run.json: expected an object"):
        derive(bad)
    with pytest.raises(RecordError, match="certificate.json: expected an object"):
        cr.parse_certificate(bad)
