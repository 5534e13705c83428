"""``GET /metrics`` scraped over HTTP from the real handler, parsed with prometheus_client's parser.

The ledger is a stand-in built from the real account book and identity tracker (no model), so the
exposition's names, types, labels and values are checked without SmolLM2.
"""

from __future__ import annotations

import threading
import urllib.request
from fractions import Fraction
from http.server import ThreadingHTTPServer
from types import SimpleNamespace

import pytest
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from witprobe.ledger.accounts import AccountBook
from witprobe.ledger.identity import IdentityTracker
from witprobe.serving.metrics import ledger_registry
from witprobe.serving.server import Handler

#: family name (as the parser gives it: a counter without ``_total``) -> type
FAMILIES = {
    "witprobe_ledger_ok": "gauge", "witprobe_engine_up": "gauge", "witprobe_requests": "counter", "witprobe_tokens_generated": "counter",
    "witprobe_accounts": "gauge", "witprobe_batches": "counter", "witprobe_write_events": "counter",
    "witprobe_restorations": "counter", "witprobe_delta_spent_max": "gauge", "witprobe_reads": "counter",
    "witprobe_foreign_reads": "counter", "witprobe_read_out_of_generation": "counter",
    "witprobe_read_unwritten": "counter", "witprobe_served_over_radius": "counter",
    "witprobe_identity_fail_closed": "counter", "witprobe_live_slot_rewrites": "counter",
    "witprobe_eprocess_log_m": "gauge", "witprobe_eprocess_crossed": "gauge", "witprobe_journal_head_seq": "gauge",
}


def stand_in_ledger(delta_req: Fraction = Fraction(1, 100)) -> SimpleNamespace:
    book = AccountBook(delta_req)
    book.open(0, "warmup", "warmup-0")
    book.open(1, "user", "r1")
    book.open(2, "user", "r2")
    return SimpleNamespace(
        lock=threading.RLock(), book=book, identity=IdentityTracker(), cfg=SimpleNamespace(delta_req=delta_req),
        journal=SimpleNamespace(head=(7, "0" * 64)), tables=[SimpleNamespace(n_reuse_at_write=0)],
        pool=SimpleNamespace(namespaces_disjoint=lambda: True), n_batches=5, n_write_events=3)


@pytest.fixture
def serve():
    servers = []

    def start(led, served):
        handler = type("H", (Handler,), {"engine": SimpleNamespace(metrics=ledger_registry(led, lambda: dict(served)))})
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        servers.append(httpd)
        return f"http://127.0.0.1:{httpd.server_address[1]}/metrics"

    yield start
    for h in servers:
        h.shutdown()
        h.server_close()


def scrape(url: str) -> tuple[str, dict[str, dict[tuple, float]], dict[str, str]]:
    with urllib.request.urlopen(url, timeout=10) as r:
        ctype, text = r.headers["Content-Type"], r.read().decode()
    values: dict[str, dict[tuple, float]] = {}
    types: dict[str, str] = {}
    for fam in text_string_to_metric_families(text):
        types[fam.name] = fam.type
        for s in fam.samples:
            values.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return ctype, values, types


def test_scrape_parses_with_every_family_and_its_values(serve):
    led = stand_in_ledger()
    served = {"requests_ok": 2, "requests_failed": 1, "requests_refused": 3, "tokens": 16, "engine_up": 1}
    led.book.get(1).budget.spent = Fraction(1, 200)
    led.book.get(2).read.n_reads = 40
    led.book.get(2).read.n_read_foreign_attributed = 4
    ctype, v, types = scrape(serve(led, served))
    assert ctype.startswith("text/plain; version=0.0.4")
    assert types == FAMILIES
    assert v["witprobe_ledger_ok"] == {(): 1.0}
    assert v["witprobe_engine_up"] == {(): 1.0}
    assert v["witprobe_requests_total"] == {(("outcome", "ok"),): 2.0, (("outcome", "failed"),): 1.0,
                                            (("outcome", "refused"),): 3.0}
    assert v["witprobe_tokens_generated_total"] == {(): 16.0}
    assert v["witprobe_accounts"] == {(("kind", "user"),): 2.0}
    assert v["witprobe_batches_total"] == {(): 5.0} and v["witprobe_write_events_total"] == {(): 3.0}
    assert v["witprobe_delta_spent_max"] == {(): 0.005}
    assert v["witprobe_reads_total"] == {(): 40.0}
    assert v["witprobe_foreign_reads_total"] == {(("attributed", "true"),): 4.0, (("attributed", "false"),): 0.0}
    assert v["witprobe_eprocess_log_m"] == {(("scope", "global"),): 0.0}
    assert v["witprobe_journal_head_seq"] == {(): 7.0}
    assert not any(k.endswith("_created") for k in v), "a reading of the ledger has no creation time"


@pytest.mark.parametrize("fault", ["unwritten", "over_budget", "crossed", "live_rewrite", "not_disjoint"])
def test_each_violation_drops_ledger_ok(serve, fault):
    led = stand_in_ledger()
    if fault == "unwritten":
        led.book.get(1).read.n_read_unwritten = 1
    elif fault == "over_budget":
        led.book.get(1).budget.spent = Fraction(2, 100)
    elif fault == "crossed":
        led.book.global_eprocess.crossed = True
    elif fault == "live_rewrite":
        led.tables[0].n_reuse_at_write = 1
    else:
        led.pool = SimpleNamespace(namespaces_disjoint=lambda: False)
    _, v, _ = scrape(serve(led, {}))
    assert v["witprobe_ledger_ok"] == {(): 0.0}
    if fault == "unwritten":
        assert v["witprobe_read_unwritten_total"] == {(): 1.0}
    if fault == "crossed":
        assert v["witprobe_eprocess_crossed"] == {(): 1.0}


def test_each_server_has_its_own_registry(serve):
    a, b = stand_in_ledger(), stand_in_ledger()
    b.n_batches = 99
    ua, ub = serve(a, {}), serve(b, {})
    assert scrape(ua)[1]["witprobe_batches_total"] == {(): 5.0}
    assert scrape(ub)[1]["witprobe_batches_total"] == {(): 99.0}
    assert not any(m.name.startswith("witprobe_") for m in REGISTRY.collect()), "the global registry stays untouched"


def test_read_meter_families_scrape_as_a_histogram_per_layer_and_counters(serve):
    """A real :class:`LiveReadMeter` fed three reads: the bound histogram's buckets are cumulative and
    count every row, the counters match the meter, and a mismatch is labelled with its layer."""
    import numpy as np
    import torch

    from witprobe.serving.read_meter import BOUND_BUCKETS, LiveReadMeter, RequestAttention

    led = stand_in_ledger()
    led.meter = LiveReadMeter([0, 1, 2], (1, 2), heads=1, dim=4, n_slots=8, bands=1, tau=0.05, audit_rate=0.0,
                              keep_exact=False, seed=0, dtype=torch.float32)
    rec = RequestAttention.empty(led.meter.metered)
    led.meter._tally(0, rec, torch.tensor([[0.0, 0.02, 0.5]], dtype=torch.float64))
    led.meter._tally(1, rec, torch.tensor([[2e-4]], dtype=torch.float64))
    led.meter.totals["rows_over_tau"] = 1
    led.meter.totals["rows_enforced"] = 1
    led.meter.mismatch_by_layer[1] = 2
    _, v, types = scrape(serve(led, {}))
    assert types["witprobe_attention_bound"] == "histogram"
    b1 = {dict(k)["le"]: x for k, x in v["witprobe_attention_bound_bucket"].items() if dict(k)["layer"] == "1"}
    assert b1["+Inf"] == 3.0 and b1["0.01"] == 1.0 and b1["0.03"] == 2.0 and b1["0.3"] == 2.0 and b1["1.0"] == 3.0
    counts = [b1[repr(float(le))] for le in BOUND_BUCKETS]
    assert counts == sorted(counts)
    assert v["witprobe_attention_bound_count"] == {(("layer", "1"),): 3.0, (("layer", "2"),): 1.0}
    assert np.isclose(v["witprobe_attention_bound_sum"][(("layer", "1"),)], 0.52)
    assert v["witprobe_attention_rows_total"] == {(): 4.0}
    assert v["witprobe_attention_fallbacks_total"] == {(): 1.0}
    assert v["witprobe_audit_mismatches_total"] == {(("layer", "1"),): 0.0, (("layer", "2"),): 2.0}
    assert v["witprobe_attention_tau"] == {(): 0.05}
