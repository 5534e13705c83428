"""The live server's refusals and health, over HTTP against the real handler.

A stand-in engine (no model) checks the handler's own rules: ``Host``/``Origin`` on every POST
(403), prompts over the KV capacity and bodies over 1 MiB (413), and a stopped engine turning
``/healthz``, ``/metrics`` and ``/generate`` to 503. One test runs the real engine (SmolLM2,
transformers' continuous batching) and crashes its generation loop from inside the model's
forward, as a poisoned request would.
"""

from __future__ import annotations

import http.client
import json
import threading
from http.server import ThreadingHTTPServer
from types import SimpleNamespace

import pytest

from tests.serving.test_metrics import scrape, stand_in_ledger
from witprobe.serving.metrics import ledger_registry
from witprobe.serving.server import EngineConfig, Handler


class StandInEngine:
    """What the handler reads of :class:`witprobe.serving.server.Engine`, without a model."""

    def __init__(self) -> None:
        self.ecfg = EngineConfig(page_size=16, num_blocks=4)  # 64 tokens of KV capacity
        self.ledger = None
        self.model = SimpleNamespace(config=SimpleNamespace(vocab_size=1000))
        self.tok = SimpleNamespace(decode=lambda ids: " ".join(map(str, ids)))
        self.up = True
        self.counters = {"requests_ok": 0, "requests_failed": 0, "requests_refused": 0, "tokens": 0}
        self.generated: list[str] = []
        self.metrics = ledger_registry(stand_in_ledger(), self.served)

    def health(self) -> dict:
        return {"ok": self.up, "engine_running": self.up, "reason": "" if self.up else "stopped: test"}

    def served(self) -> dict:
        return {**self.counters, "engine_up": int(self.up)}

    def count(self, **inc: int) -> None:
        for k, v in inc.items():
            self.counters[k] += v

    def encode(self, prompt: str) -> list[int]:
        return [1] * len(prompt.split())

    def generate(self, rid: str, ids: list[int], mnt: int):
        self.generated.append(rid)
        return SimpleNamespace(error=None, generated_tokens=[7] * mnt)


@pytest.fixture
def server():
    made = []

    def start(engine):
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), type("H", (Handler,), {"engine": engine}))
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        made.append(httpd)
        return httpd.server_address[1]

    yield start
    for h in made:
        h.shutdown()
        h.server_close()


def request(port: int, method: str, path: str, body: dict | bytes | None = None, headers: dict | None = None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    try:
        conn.request(method, path, body=data, headers={"Content-Type": "application/json", **(headers or {})})
    except (BrokenPipeError, ConnectionResetError):
        pass  # the server answered (413) and closed before the whole body was sent: its answer is still there
    r = conn.getresponse()
    text = r.read().decode()
    conn.close()
    return r.status, text


def test_a_foreign_host_or_origin_is_refused_before_anything_runs(server):
    eng = StandInEngine()
    port = server(eng)
    ok = {"request_id": "r1", "input_ids": [1, 2, 3], "max_new_tokens": 2}
    for headers, why in (({"Host": "evil.example:80"}, "Host"), ({"Host": f"attacker.test:{port}"}, "Host"),
                         ({"Origin": "http://evil.example"}, "Origin"), ({"Origin": f"http://127.0.0.1:{port + 1}"}, "Origin")):
        code, text = request(port, "POST", "/generate", ok, headers)
        assert code == 403 and why in json.loads(text)["error"], (headers, code, text)
    code, _ = request(port, "POST", "/shutdown", None, {"Host": "evil.example"})
    assert code == 403
    assert eng.generated == []
    code, text = request(port, "POST", "/generate", ok, {"Origin": f"http://localhost:{port}", "Host": f"localhost:{port}"})
    assert code == 200 and json.loads(text)["tokens"] == [7, 7] and eng.generated == ["r1"]


def test_prompts_over_the_kv_capacity_and_big_bodies_get_413(server):
    eng = StandInEngine()
    port = server(eng)
    code, text = request(port, "POST", "/generate", {"request_id": "r1", "input_ids": [1] * 60, "max_new_tokens": 5})
    assert code == 413 and "KV capacity of 64 tokens" in json.loads(text)["error"]
    code, _ = request(port, "POST", "/generate", {"request_id": "r2", "input_ids": [1] * 59, "max_new_tokens": 5})
    assert code == 200  # 64 tokens exactly fit
    code, text = request(port, "POST", "/generate", b"x" * ((1 << 20) + 1))
    assert code == 413 and "1 MiB" in json.loads(text)["error"]
    assert eng.generated == ["r2"] and eng.counters["requests_refused"] == 2
    _, v, _ = scrape(f"http://127.0.0.1:{port}/metrics")
    assert v["witprobe_requests_total"][(("outcome", "refused"),)] == 2.0


def test_a_stopped_engine_turns_healthz_metrics_and_generate_to_503(server):
    eng = StandInEngine()
    port = server(eng)
    assert request(port, "GET", "/healthz")[0] == 200
    eng.up = False
    code, text = request(port, "GET", "/healthz")
    assert code == 503 and json.loads(text) == {"ok": False, "engine_running": False, "reason": "stopped: test"}
    code, text = request(port, "GET", "/metrics")
    assert code == 503 and "witprobe_engine_up 0.0" in text
    code, text = request(port, "POST", "/generate", {"request_id": "r1", "input_ids": [1], "max_new_tokens": 1})
    assert code == 503 and eng.generated == []


@pytest.mark.slow
def test_a_request_that_crashes_the_real_engine_turns_it_unhealthy(server, monkeypatch):
    """SmolLM2 on transformers' continuous batching: a forward that raises (as a poisoned request
    would) ends the generation loop; the request gets an error, then /healthz is 503."""
    from witprobe.serving.server import Engine

    eng = Engine(EngineConfig(num_blocks=8, max_new_tokens=2), None, None)
    try:
        eng.warmup("Hello there", "warmup-")
        port = server(eng)
        assert request(port, "GET", "/healthz")[0] == 200
        model = eng.model.model

        def poisoned(*a, **k):
            raise RuntimeError("poisoned request")

        monkeypatch.setattr(model, "forward", poisoned)
        code, text = request(port, "POST", "/generate", {"request_id": "bad", "prompt": "Crash now", "max_new_tokens": 2})
        assert code in (500, 503), (code, text)
        code, text = request(port, "GET", "/healthz")
        assert code == 503 and json.loads(text)["engine_running"] is False, text
        code, _ = request(port, "POST", "/generate", {"request_id": "after", "prompt": "Hi", "max_new_tokens": 1})
        assert code == 503
    finally:
        eng._stop.set()
        eng.manager.stop(block=True, timeout=30)
