"""``python -m witprobe.serve``: transformers serve's OpenAI-compatible app with the ledger and the live
read meter attached, driven by the real ``openai`` client and scraped by a Prometheus text parser."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the serve extra (pip install 'witprobe[serve]') is part of the test extra")
openai = pytest.importorskip("openai")

from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from witprobe.ledger.journal import read_records, verify  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "python"), str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


@pytest.fixture
def server(tmp_path):
    ready = tmp_path / "ready.json"
    out = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "witprobe.serve", "--out", str(out), "--port", "0", "--ready-file", str(ready),
                             "--audit-rate", "0.01", "--keep-exact", "--num-blocks", "64"],
                            stdout=open(tmp_path / "server.log", "wb"), stderr=subprocess.STDOUT, env=_env())
    t_end = time.monotonic() + 300
    while not ready.is_file():
        assert proc.poll() is None, (tmp_path / "server.log").read_text()[-2000:]
        assert time.monotonic() < t_end, "server not ready"
        time.sleep(0.2)
    port = json.loads(ready.read_text())["port"]
    yield proc, port, out
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def test_openai_client_chat_stream_completion_metrics_and_journal(server):
    proc, port, out = server
    base = f"http://127.0.0.1:{port}"
    client = openai.OpenAI(base_url=f"{base}/v1", api_key="none", max_retries=0)
    raw = client.chat.completions.with_raw_response.create(
        model="smollm2", messages=[{"role": "user", "content": "What is the capital of France?"}], max_tokens=3,
        extra_headers={"X-Request-ID": "chat-1"})
    r = raw.parse()
    assert r.id == "chat-1" and r.choices[0].message.content and r.usage.completion_tokens == 3
    head = json.loads(raw.headers["x-witprobe-verdict"])
    assert head["request_id"] == "chat-1" and head["ok"] is True
    assert 0 < head["attention"]["bound_max"] <= 1 and head["attention"]["tier"] == "empirical"
    stream = client.chat.completions.create(model="smollm2", messages=[{"role": "user", "content": "Hi"}], max_tokens=3,
                                            stream=True, extra_headers={"X-Request-ID": "stream-1"})
    chunks = list(stream)
    assert chunks and all(c.id == "stream-1" for c in chunks)
    comp = client.completions.create(model="smollm2", prompt="The capital of France is", max_tokens=2,
                                     extra_headers={"X-Request-ID": "comp-1"})
    assert comp.choices[0].text
    for rid in ("chat-1", "stream-1", "comp-1"):
        v = json.loads(urllib.request.urlopen(f"{base}/witprobe/verdict/{rid}", timeout=30).read())
        a = v["attention"]
        assert len(a["bound_max_per_layer"]) == 30 and all(b is not None for b in a["bound_max_per_layer"]), rid
        assert a["bound_beaten"] == 0 and a["audit"]["mismatches"] == 0
    with urllib.request.urlopen(f"{base}/metrics", timeout=30) as resp:
        assert resp.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        fams = {f.name: f for f in text_string_to_metric_families(resp.read().decode())}
    assert fams["witprobe_attention_bound"].type == "histogram"
    counts = {s.labels["layer"]: s.value for s in fams["witprobe_attention_bound"].samples if s.name.endswith("_count")}
    assert len(counts) == 30 and all(c > 0 for c in counts.values())
    rows = next(s.value for s in fams["witprobe_attention_rows"].samples if s.name.endswith("_total"))
    assert rows == sum(counts.values())
    assert fams["witprobe_ledger_ok"].samples[0].value == 1.0
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=120) == 0
    res = verify(out / "journal.sqlite")
    assert res.ok and res.closed
    att = {b["rid"] for _, k, b in read_records(out / "journal.sqlite") if k == "attention"}
    assert {"chat-1", "stream-1", "comp-1"} <= att


def _live(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "witprobe.ledger", "live", "--out", str(tmp_path / "live"), "--quiet", *args],
                          capture_output=True, text=True, env=_env(), timeout=900)


def test_ledger_live_drives_the_openai_server_16_requests_from_8_clients(tmp_path):
    """The acceptance run: every request's verdict carries a bound for each of the 30 layers, the gate
    re-derives it from the journal, nothing beats the bound and the audit stays quiet."""
    r = _live(tmp_path, "--api", "openai", "--requests", "16", "--concurrency", "8", "--max-new-tokens", "2",
              "--keep-exact", "--audit-rate", "0.01")
    assert r.returncode == 0, r.stderr[-2000:]
    gate = json.loads((tmp_path / "live" / "gate.json").read_text())
    for k in ("attention_bound_every_request", "kernel_audit_mismatches==0", "live_bound_not_beaten", "clients_served",
              "n_user_requests==16"):
        assert gate["criteria"][k]["ok"], k
    clients = json.loads((tmp_path / "live" / "clients.json").read_text())
    assert len(clients) == 16 and all(c["status"] == 200 and 0 < c["attention"]["bound_max"] <= 1 for c in clients)


@pytest.mark.parametrize("args, needle", [
    (["--api", "openai", "--fault", "drop-plan"], "--api openai takes neither"),
    (["--tau", "1.5"], "tau must be a number in (0, 1)"),
    (["--audit-rate", "2"], "audit_rate must be a number in [0, 1]"),
    (["--bound-layers", "x"], "--bound-layers must be all or a comma list"),
])
def test_ledger_live_refuses_bad_read_meter_options_in_one_line(tmp_path, args, needle):
    r = _live(tmp_path, *args)
    assert r.returncode == 2 and needle in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert not (tmp_path / "live").exists()


def test_serve_refuses_bad_options_in_one_line_and_writes_nothing(tmp_path):
    for args, needle in ((["--tau", "0"], "tau must be a number in (0, 1)"), (["--model", "no-such-model"], "no-such-model")):
        r = subprocess.run([sys.executable, "-m", "witprobe.serve", "--out", str(tmp_path / "o"), *args],
                           capture_output=True, text=True, env=_env(), timeout=120)
        assert r.returncode == 2 and needle in r.stderr and r.stderr.count("\n") == 1, r.stderr
        assert not (tmp_path / "o").exists()
