"""`certify report DIR`: the page's facts come from the committed artifact, it renders in headless
Chromium without console errors and is not blank, corrupt input exits 2 with one line and leaves
nothing written, and `--force` still replaces a run directory that holds its report."""

from __future__ import annotations

import html
import json
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from witprobe.certify.cli import main

ROOT = Path(__file__).resolve().parents[1]
ARTIFACT = ROOT / "artifacts" / "coverage" / "smollm2-int8"
RUNNER_UP_GREY = (0x8C, 0x95, 0x9F)  # html_report.COLOURS["runner_up"]: drawn by the plots only


@pytest.fixture()
def run_dir(tmp_path: Path) -> Path:
    d = tmp_path / "run"
    shutil.copytree(ARTIFACT, d)
    (d / "report.html").unlink(missing_ok=True)
    return d


def _write(run_dir: Path, capsys) -> str:
    assert main(["report", str(run_dir)]) == 0
    assert capsys.readouterr().out.strip() == f"wrote {run_dir / 'report.html'}"
    return (run_dir / "report.html").read_text(encoding="utf-8")


def _svgs(page: str) -> list[str]:
    return re.findall(r"<svg .*?</svg>", page, flags=re.S)


def test_report_states_the_artifacts_facts(run_dir, capsys):
    page = _write(run_dir, capsys)
    cert = json.loads((ARTIFACT / "certificate.json").read_text())
    run = json.loads((ARTIFACT / "run.json").read_text())
    s = cert["summary"]
    assert f'id="verdict">{html.escape("verdict: " + s["headline"])}</div>' in page  # the CLI's verdict line
    assert f"{run['model']['num_layers']} layers" in page and s["layers"] == 30
    tv = [c for c in cert["claims"] if c["kind"] == "attn_tv"]
    # the plot holds one claim-bound marker per TV layer, coloured by its tier
    plot = _svgs(page)[0]
    squares = re.findall(r'<rect x="[\d.]+" y="[\d.]+" width="8" height="8" fill="(#[0-9a-f]{6})"><title>(L\d\d)', plot)
    assert len(squares) == len(tv) == 30
    assert {f for f, _ in squares} == {"#1a7f37"} and all(c["tier"] == "certified" for c in tv)
    worst = s["largest_tv_bound"]
    assert worst["bound"]["decimal_up"] == "0.199984" and worst["bound"]["decimal_up"] in page  # README: L13, box
    # every claim's row carries its tier and its reason
    for c in cert["claims"]:
        row = re.search(rf"<tr><td>{re.escape(c['id'])}</td>.*?</tr>", page)
        assert row, c["id"]
        assert f'tier-{c["tier"]}">{c["tier"]}<' in row.group(0) and c["tier_reason"] in row.group(0)
    assert page.count('class="tier tier-certified"') == 2 * s["tiers"]["certified"]  # per-layer and claims tables
    e = s["end_to_end"]
    assert f"greedy tokens agree: {e['greedy_position_matches']}/{e['greedy_total']}" in page
    assert "<tr><td>smollm2</td><td>llama-gqa</td><td>plain_kv</td><td>30/30</td>" in page  # the coverage table
    assert "Coq: kernel-checked every claim theorem" in page and "coq: 30/30 kernel-checked" in page
    assert len(_svgs(page)) == 8  # TV bounds, tightness, two output bounds, key and value writes, W/||D||, next-token TV


def test_report_is_self_contained(run_dir, capsys):
    page = _write(run_dir, capsys)
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)
    assert "<link" not in page and "<script" not in page and "@import" not in page and "url(" not in page


def _vacuous_l03(run_dir: Path) -> None:
    """Make layer 3's claim vacuous and empirical in ``certificate.json`` (run.json untouched)."""
    cert_path = run_dir / "certificate.json"
    cert = json.loads(cert_path.read_text())
    c = next(c for c in cert["claims"] if c["id"] == "L03.attn_tv")
    c["vacuous"], c["tier"], c["tier_reason"] = True, "empirical", "vacuous: the TV bound is >= 1"
    c["bound"] = {"exact": "3/2", "decimal_up": "1.500000"}
    cert_path.write_text(json.dumps(cert))  # run.json untouched: its SHA-256 still matches


def test_vacuous_and_empirical_bounds_are_never_labelled_certified(run_dir, capsys, monkeypatch):
    """The page's labels for a vacuous, empirical claim, as if the certificate were a consistent one
    of another run (the re-derivation that would refuse this edit is switched off here; the next
    test keeps it on)."""
    import witprobe.certify.html_report as html_report

    _vacuous_l03(run_dir)
    monkeypatch.setattr(html_report, "rederive_problems", lambda run, sha, cert: [])
    page = _write(run_dir, capsys)
    row = re.search(r'<tr><td class="n">3</td>.*?</tr>', page).group(0)
    assert "1.500000 <span class=\"vac\">vacuous</span>" in row and "tier-empirical" in row
    assert "tier-certified" not in row
    plot = _svgs(page)[0]
    assert re.search(r'<circle [^>]*stroke="#cf222e"[^>]*><title>L03\.attn_tv bound 1\.500000 \(vacuous', plot)
    assert "bound (vacuous)" in plot


def test_an_edited_certificate_is_rendered_not_verified(run_dir, capsys):
    """The same edit, with the re-derivation on: the page is written (exit 1) with the NOT VERIFIED
    banner naming the edited fields, no verdict line and no tier shown as certified."""
    _vacuous_l03(run_dir)
    assert main(["report", str(run_dir)]) == 1
    out = capsys.readouterr().out
    assert "NOT VERIFIED" in out and "claims[9].tier" in out
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    assert 'id="verdict">NOT VERIFIED' in page and "claims[9].vacuous" in page
    assert 'class="tier tier-certified"' not in page and 'id="verdict">verdict:' not in page
    assert page.count('class="tier tier-UNVERIFIED"') >= 30


def test_a_certificate_claiming_certified_without_a_kernel_is_refused(run_dir, capsys):
    cert_path = run_dir / "certificate.json"
    cert = json.loads(cert_path.read_text())
    cert["claims"][0]["kernels"]["coq"]["status"] = "unchecked"
    cert_path.write_text(json.dumps(cert))
    assert main(["report", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert "certificate.json" in err and "claims[0]" in err and "no kernel checked its theorem" in err
    assert not (run_dir / "report.html").exists()


CORRUPT = {
    "run.json truncated": ("run.json", lambda p: p.write_text(p.read_text()[:80]), "not valid JSON"),
    "certificate.json a tier missing": ("certificate.json", lambda p: _edit(p, lambda d: d["claims"][4].pop("tier")),
                                        "claims[4].tier: missing"),
    "a tampered headline": ("certificate.json",
                            lambda p: _edit(p, lambda d: d["summary"].__setitem__("headline", "pass (trust me)")),
                            "field summary.headline"),
    "a bound's decimal not its exact value": (
        "certificate.json", lambda p: _edit(p, lambda d: d["claims"][0]["bound"].__setitem__("decimal_up", "0.000001")),
        "claims[0].bound.decimal_up"),
    "run.json of another run": ("run.json", lambda p: _edit(p, lambda d: d["config"].__setitem__("bands", 2)),
                                "field run_json_sha256"),
}


def _edit(path: Path, fn) -> None:
    data = json.loads(path.read_text())
    fn(data)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("case", sorted(CORRUPT))
def test_corrupt_input_exits_2_with_one_line_and_writes_nothing(case, run_dir, capsys):
    name, corrupt, expect = CORRUPT[case]
    corrupt(run_dir / name)
    before = sorted(p.name for p in run_dir.iterdir())
    assert main(["report", str(run_dir)]) == 2
    captured = capsys.readouterr()
    lines = [ln for ln in captured.err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in captured.err, captured.err
    assert expect in lines[0] and ("certificate.json" in lines[0] or "run.json" in lines[0]), lines[0]
    assert captured.out == ""
    assert sorted(p.name for p in run_dir.iterdir()) == before, "nothing written, no temporary file left"


def test_out_option_and_unwritable_out(run_dir, tmp_path, capsys):
    target = tmp_path / "elsewhere.html"
    assert main(["report", str(run_dir), "--out", str(target)]) == 0
    assert target.read_text().startswith("<!doctype html>") and not (run_dir / "report.html").exists()
    capsys.readouterr()
    assert main(["report", str(run_dir), "--out", str(tmp_path / "missing" / "r.html")]) == 2
    assert "is not a directory" in capsys.readouterr().err


def test_force_replaces_a_run_directory_holding_its_report(run_dir, capsys):
    from witprobe.certify.pipeline import prepare_output

    _write(run_dir, capsys)
    prepare_output(run_dir, force=True)  # report.html is a file witprobe writes: no refusal


# --------------------------------------------------------------------------- rendering in Chromium


def _png_pixels(path: Path) -> tuple[int, int, list[bytes]]:
    """Decode an 8-bit RGB/RGBA non-interlaced PNG (what Chromium writes) into rows of raw pixels."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        (n,), kind = struct.unpack(">I", data[pos:pos + 4]), data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, colour, _, _, interlace = ihdr
    assert depth == 8 and colour in (2, 6) and interlace == 0, ihdr
    bpp = 3 if colour == 2 else 4
    raw, stride, rows, prev = zlib.decompress(idat), w * bpp, [], bytearray(w * bpp)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, bpp, rows


def _chromium(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([shutil.which("chromium"), "--headless", "--no-sandbox", "--disable-gpu",
                           "--enable-logging=stderr", "--v=0", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium is not installed (CI installs it)")
def test_report_renders_in_headless_chromium(run_dir, tmp_path, capsys):
    _write(run_dir, capsys)
    url = (run_dir / "report.html").as_uri()
    shot = tmp_path / "shot.png"
    p = _chromium(f"--screenshot={shot}", "--window-size=1280,2000", url)
    assert p.returncode == 0 and shot.is_file(), p.stderr[-2000:]
    errors = [ln for ln in p.stderr.splitlines() if ":CONSOLE" in ln or "Uncaught" in ln]
    assert not errors, errors
    dom = _chromium("--dump-dom", url)
    assert dom.returncode == 0
    assert dom.stdout.count("<svg") == 8 and dom.stdout.count("<rect") > 60, "the SVG plots are in the rendered DOM"
    w, bpp, rows = _png_pixels(shot)
    colours = {row[i:i + 3] for row in rows[::4] for i in range(0, len(row), 4 * bpp)}
    assert len(colours) > 50, f"the screenshot looks blank ({len(colours)} distinct colours)"
    grey = sum(1 for row in rows for i in range(0, len(row), bpp) if tuple(row[i:i + 3]) == RUNNER_UP_GREY)
    assert grey > 1000, f"the plots' runner-up markers were not drawn ({grey} pixels of their colour)"
