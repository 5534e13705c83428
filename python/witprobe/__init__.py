"""witprobe: runtime observability with machine-checked certificates for compressed attention memory.

Layers (see ``ARCHITECTURE.md``):

- :mod:`witprobe.calculus`: metrics, tiers, typed contracts, chains, bridges, the tier registry.
- :mod:`witprobe.formal`: per-run obligations, their rendering to Lean, the reference checker,
  and the Lean runner with its axiom audit.
- :mod:`witprobe.memory`: memory classes and reference codecs.
- :mod:`witprobe.models`: the model zoo and its loaders.
- :mod:`witprobe.probe`: the witness cache and the meters of the three operators.
- :mod:`witprobe.ledger`: the request-level risk ledger.
- :mod:`witprobe.certify`: the ``python -m witprobe.certify`` command line and pipeline.
"""

from witprobe.version import __version__  # noqa: F401  (re-exported: ``witprobe.__version__``)


def __getattr__(name: str):  # lazy: ``import witprobe`` stays light (the gate needs no torch)
    if name in ("observe", "ObservedRun", "UnobservedReads"):
        from witprobe import api as _observe

        return getattr(_observe, name)
    raise AttributeError(f"module 'witprobe' has no attribute {name!r}")
