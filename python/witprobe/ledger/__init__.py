"""The request-level risk ledger (paper section 5), one concept per module.

- :mod:`~witprobe.ledger.budget`: exact telescoping budgets per account.
- :mod:`~witprobe.ledger.certificates`: what may enter (deterministic, probabilistic; empirical
  refused) and the entry-level read certificate ``W_entry <= W_thr``.
- :mod:`~witprobe.ledger.writer`: the certified writer (pre-authorize, draw, audit, restore).
- :mod:`~witprobe.ledger.slots`: slot state, generation and owner.
- :mod:`~witprobe.ledger.identity`: uids, request start on the write path, per-row attribution.
- :mod:`~witprobe.ledger.owner`: foreign reads attributed to their writer.
- :mod:`~witprobe.ledger.eprocess`: the anytime-valid drift sentinel.
- :mod:`~witprobe.ledger.accounts`: the per-request record.
- :mod:`~witprobe.ledger.journal`: the durable hash-chained journal and ``verify``.
- :mod:`~witprobe.ledger.pool`: the shared paged pool and its prefix cache.
- :mod:`~witprobe.ledger.simulate`, :mod:`~witprobe.ledger.replica`: concurrent serving and
  replica coupling; :mod:`~witprobe.ledger.acceptance`: the acceptance gate.
- :mod:`~witprobe.ledger.trace`, :mod:`~witprobe.ledger.replay`: recorded traces and replay.
- :mod:`~witprobe.ledger.sentinel`: the sampling corruption sentinel (operator over the writer's block
  record, and its detection latency).
- :mod:`~witprobe.ledger.derive`: a rank's ledger record re-derived from its journal (what the gate reads).

This package's ``__init__`` imports nothing heavy: the journal works without torch.
"""
