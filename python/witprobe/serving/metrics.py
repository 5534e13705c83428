"""Per-request verdicts and the Prometheus exposition of a live ledger (``prometheus_client``).

A verdict is the ledger's in-memory reading for one request (a cache of the journal: the gate
re-derives every criterion from the journal itself). Its fields:

- ``delta_spent`` (exact ``num/den``): the request's spend ``sum delta_i = delta_req k/(k+1)``
  after ``k`` probabilistic write events, summed over the request's accounts;
- ``write_events``, ``restorations`` (entries whose realized witness exceeded the pre-draw radius
  and were restored exact in the same call), ``reads``, ``foreign_reads_attributed`` /
  ``foreign_reads_unattributed``, ``read_out_of_generation``, ``read_unwritten``;
- ``eprocess``: the request's e-process (``log_M``, ``log_M_max``, crossed);
- ``tier``: the tier of each claim, from the metric registry (``certified`` only for what the Coq
  kernel checked);
- ``ok``: the request-level criteria (one account, spend <= delta_req, no unattributed foreign,
  stale or unwritten read, no alarm).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Any

import numpy as np
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from witprobe.calculus.rounding import fraction_text
from witprobe.ledger.accounts import Account, emitted_metrics

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
VERDICT_TIERS = {"delta_spent": "request:delta_spent@ledger", "sr_radius": "entry:sr_radius@write",
                 "eprocess": "request:eprocess_log_m@ledger"}


def request_verdict(rid: str, accounts: list[Account], finished: bool, delta_req: Fraction) -> dict[str, Any]:
    """Verdict of request ``rid`` from its accounts (normally one; several means a split identity)."""
    tiers = emitted_metrics()
    spent = sum((a.budget.spent for a in accounts), Fraction(0))
    rd = {k: sum(getattr(a.read, k) for a in accounts) for k in
          ("n_reads", "n_read_foreign_attributed", "n_read_foreign_unattributed", "n_read_out_of_generation",
           "n_read_unwritten", "n_served_over_radius")}
    crossed = any(a.eprocess.crossed for a in accounts)
    lm = [a.eprocess.log_m_max for a in accounts if a.eprocess.log_m_max is not None]
    v = {
        "request_id": rid,
        "uids": [a.uid for a in accounts],
        "finished": finished,
        "delta_spent": fraction_text(spent),
        "delta_spent_float": float(spent),
        "delta_req": fraction_text(delta_req),
        "write_events": sum(a.n_write_events for a in accounts),
        "prob_events": sum(a.budget.n_prob_events for a in accounts),
        "entries_written": sum(a.n_entries_written for a in accounts),
        "entries_authorized": sum(a.n_authorized for a in accounts),
        "restorations": sum(a.n_auth_violations for a in accounts),
        "reads": rd["n_reads"],
        "foreign_reads_attributed": rd["n_read_foreign_attributed"],
        "foreign_reads_unattributed": rd["n_read_foreign_unattributed"],
        "read_out_of_generation": rd["n_read_out_of_generation"],
        "read_unwritten": rd["n_read_unwritten"],
        "served_over_radius": rd["n_served_over_radius"],
        "eprocess": {"log_M_max": max(lm) if lm else None, "n_factors": sum(a.eprocess.n_factors for a in accounts),
                     "crossed": crossed},
        "tier": {k: tiers[m] for k, m in VERDICT_TIERS.items()},
    }
    v["ok"] = bool(len(accounts) == 1 and spent <= delta_req and rd["n_read_foreign_unattributed"] == 0
                   and rd["n_read_out_of_generation"] == 0 and rd["n_read_unwritten"] == 0
                   and rd["n_served_over_radius"] == 0 and not crossed)
    return v


class LedgerCollector(Collector):
    """Reads a :class:`~witprobe.serving.attach.LiveLedger` at scrape time (a custom collector: the ledger
    holds the state, the registry only exposes it).

    ``served`` returns the server's own counters (``requests_ok``, ``requests_failed``, ``tokens``).
    """

    def __init__(self, led: Any, served: Callable[[], dict[str, int]]) -> None:
        self.led = led
        self.served = served

    def collect(self) -> Iterator[Metric]:
        led, served = self.led, self.served()
        with led.lock:
            accounts = list(led.book.accounts.values())
            users = [a for a in accounts if a.kind == "user"]
            tot = {k: sum(getattr(a.read, k) for a in accounts) for k in
                   ("n_reads", "n_read_foreign_attributed", "n_read_foreign_unattributed", "n_read_out_of_generation",
                    "n_read_unwritten", "n_served_over_radius")}
            restor = sum(a.n_auth_violations for a in accounts)
            worst = max((a.budget.spent for a in users), default=Fraction(0))
            g = led.book.global_eprocess
            crossed = int(g.crossed or any(a.eprocess.crossed for a in accounts))
            seq, _h = led.journal.head
            fail_closed = led.identity.identity_fail_closed
            live_rewrites = sum(t.n_reuse_at_write for t in led.tables)
            ok = int(tot["n_read_foreign_unattributed"] == 0 and tot["n_read_out_of_generation"] == 0
                     and tot["n_read_unwritten"] == 0 and tot["n_served_over_radius"] == 0 and not crossed
                     and fail_closed == 0 and live_rewrites == 0 and worst <= led.cfg.delta_req
                     and led.pool.namespaces_disjoint())
            m = [
                ("witprobe_ledger_ok", "gauge", "1 while every live criterion holds (the value to alert on)", [(ok, {})]),
                ("witprobe_engine_up", "gauge", "1 while the engine's generation loop runs (0: a request stopped it)",
                 [(served.get("engine_up", 0), {})]),
                ("witprobe_requests_total", "counter", "HTTP generation requests by outcome",
                 [(served.get("requests_ok", 0), {"outcome": "ok"}), (served.get("requests_failed", 0), {"outcome": "failed"}),
                  (served.get("requests_refused", 0), {"outcome": "refused"})]),
                ("witprobe_tokens_generated_total", "counter", "tokens returned to clients", [(served.get("tokens", 0), {})]),
                ("witprobe_accounts", "gauge", "accounts opened (user requests; warmup is uid 0)", [(len(users), {"kind": "user"})]),
                ("witprobe_batches_total", "counter", "engine forwards seen by the ledger", [(led.n_batches, {})]),
                ("witprobe_write_events_total", "counter", "certified write events", [(led.n_write_events, {})]),
                ("witprobe_restorations_total", "counter", "entries restored exact by the audit", [(restor, {})]),
                ("witprobe_delta_spent_max", "gauge", "largest per-request spend (float reading of the exact value)", [(float(worst), {})]),
                ("witprobe_reads_total", "counter", "entry reads checked", [(tot["n_reads"], {})]),
                ("witprobe_foreign_reads_total", "counter", "reads of entries written by another account",
                 [(tot["n_read_foreign_attributed"], {"attributed": "true"}), (tot["n_read_foreign_unattributed"], {"attributed": "false"})]),
                ("witprobe_read_out_of_generation_total", "counter", "reads of a block whose generation moved on", [(tot["n_read_out_of_generation"], {})]),
                ("witprobe_read_unwritten_total", "counter", "reads of never-written or invalidated entries", [(tot["n_read_unwritten"], {})]),
                ("witprobe_served_over_radius_total", "counter", "reads of entries whose witness exceeds their radius", [(tot["n_served_over_radius"], {})]),
                ("witprobe_identity_fail_closed_total", "counter", "entries written exact because the batch plan was unattributable", [(fail_closed, {})]),
                ("witprobe_live_slot_rewrites_total", "counter", "writes over live slots (block reuse without invalidation)", [(live_rewrites, {})]),
                ("witprobe_eprocess_log_m", "gauge", "global e-process log M (a reading)", [(g.log_m, {"scope": "global"})]),
                ("witprobe_eprocess_crossed", "gauge", "1 once any e-process crossed ln(1/delta_e)", [(crossed, {})]),
                ("witprobe_journal_head_seq", "gauge", "seq of the last committed journal record", [(seq, {})]),
            ]
        for name, typ, help_, samples in m:
            keys = sorted(samples[0][1])
            fam = (GaugeMetricFamily if typ == "gauge" else CounterMetricFamily)(name, help_, labels=keys)
            for value, labels in samples:
                fam.add_metric([labels[k] for k in keys], value)
            yield fam


class ReadMeterCollector(Collector):
    """The live read meter's families (:mod:`witprobe.serving.read_meter`), read at scrape time.

    ``witprobe_attention_bound`` is a histogram per metered layer of every row's live bound (TV
    units; a float64 evaluation of the box form, tier ``empirical``); the counters count rows,
    rows over ``tau``, rows served exact (fallbacks), requests with a row over ``tau``, audited
    (row, head) pairs and audit mismatches per layer.
    """

    def __init__(self, led: Any) -> None:
        self.led = led

    def collect(self) -> Iterator[Metric]:
        from witprobe.serving.read_meter import BOUND_BUCKETS

        met = self.led.meter
        with self.led.lock:
            hist, hsum, tot = met.hist.copy(), met.hist_sum.copy(), dict(met.totals)
            mism = met.mismatch_by_layer.copy()
            worst = met.audit_worst_ratio
        h = HistogramMetricFamily("witprobe_attention_bound", "live per-row attention TV bound (box form, float64; "
                                  "not kernel-checked)", labels=["layer"])
        for i, layer in enumerate(met.metered):
            cum = np.cumsum(hist[i])
            h.add_metric([str(layer)], [(repr(float(le)), float(c)) for le, c in zip(BOUND_BUCKETS, cum[:-1])]
                         + [("+Inf", float(cum[-1]))], float(hsum[i]))
        yield h
        counters = [
            ("witprobe_attention_rows", "attention rows (query row x head x layer) bounded", tot["rows"]),
            ("witprobe_attention_rows_over_tau", "rows whose live bound exceeded tau", tot["rows_over_tau"]),
            ("witprobe_attention_fallbacks", "rows served exact from the side pool (enforce mode)", tot["rows_enforced"]),
            ("witprobe_requests_over_tau", "finished requests with at least one row over tau", tot["requests_over_tau"]),
            ("witprobe_requests_budget_exhausted", "finished requests whose cumulative bound reached the request "
             "budget (served exact from then on)", tot["requests_budget_exhausted"]),
            ("witprobe_audit_rows", "(row, head) pairs whose kernel output was audited", tot["audit_rows"]),
            ("witprobe_attention_bound_beaten", "rows whose realized TV exceeded the bound (exact side pool only; must be 0)",
             tot["bound_beaten"]),
        ]
        for name, help_, v in counters:
            fam = CounterMetricFamily(name, help_)
            fam.add_metric([], v)
            yield fam
        fam = CounterMetricFamily("witprobe_audit_mismatches", "audited outputs outside the kernel's float allowance",
                                  labels=["layer"])
        for i, layer in enumerate(met.metered):
            fam.add_metric([str(layer)], int(mism[i]))
        yield fam
        fam = GaugeMetricFamily("witprobe_audit_worst_ratio", "largest audited |kernel - float64| / allowance (a reading; "
                                "below 1 on a clean kernel, its headroom)")
        fam.add_metric([], worst)
        yield fam
        fam = GaugeMetricFamily("witprobe_attention_tau", "enforcement threshold tau (absent: not enforcing)")
        if met.tau is not None:
            fam.add_metric([], met.tau)
        yield fam
        fam = GaugeMetricFamily("witprobe_side_pool_bytes", "bytes of the exact side pool and of the witness table",
                                labels=["pool"])
        fam.add_metric(["exact"], met.side_pool_bytes)
        fam.add_metric(["witness"], met.witness_bytes)
        yield fam


def ledger_registry(led: Any, served: Callable[[], dict[str, int]]) -> CollectorRegistry:
    """A registry of its own (not the process-global one) for one server's ledger (and its read meter)."""
    reg = CollectorRegistry(auto_describe=False)
    reg.register(LedgerCollector(led, served))
    if getattr(led, "meter", None) is not None:
        reg.register(ReadMeterCollector(led))
    return reg


def prometheus_text(registry: CollectorRegistry) -> str:
    """The registry in Prometheus text format 0.0.4 (:data:`CONTENT_TYPE`)."""
    return generate_latest(registry).decode()
