"""The registry of memory kinds: one line per kind.

Adding a memory kind is one new module (its :class:`~witprobe.kinds.base.MemoryKind` record and,
for a new storage layout, its witness layer) plus one line in :data:`_BUILTIN`. Every consumer
(the layout of a model, the measurement, the derivation, the coverage table, the claim theorems,
the zoo) reads the record from :data:`KINDS`.
"""

from __future__ import annotations

from witprobe.kinds import dense_kv, latent, latent_indexed, recurrent, v4
from witprobe.kinds.base import MemoryKind
from witprobe.self_checks import lookup

_BUILTIN = (
    dense_kv.KIND,
    latent.KIND,
    latent_indexed.KIND,
    recurrent.KIND,
    v4.SLIDING,
    v4.HCA,
    v4.CSA,
)

KINDS: dict[str, MemoryKind] = {}


class RegistryError(ValueError):
    """A memory kind cannot be registered (the message says why)."""


def register(kind: MemoryKind) -> MemoryKind:
    """Add ``kind`` to :data:`KINDS` after checking it against the kinds already there."""
    if kind.name in KINDS:
        raise RegistryError(f"memory kind {kind.name!r} is already registered")
    unknown = [n for n in kind.read_checks if lookup(n) is None or lookup(n).record == "probe"]
    if unknown:
        raise RegistryError(f"memory kind {kind.name!r}: counters {unknown} are not run.json self-checks of "
                            "witprobe.self_checks (give each a meaning there first)")
    for other in KINDS.values():
        overlap = other.latent_cache is None or kind.latent_cache is None or other.latent_cache == kind.latent_cache
        if other.layer_type == kind.layer_type and set(other.model_types) == set(kind.model_types) and overlap:
            raise RegistryError(f"memory kinds {other.name!r} and {kind.name!r} both serve {kind.layer_type!r} layers")
    KINDS[kind.name] = kind
    return kind


def unregister(name: str) -> None:
    """Remove a kind (for tests that register a toy kind)."""
    KINDS.pop(name, None)


def kind_of(name: str) -> MemoryKind:
    try:
        return KINDS[name]
    except KeyError:
        raise RegistryError(f"memory kind {name!r} is not one of {sorted(KINDS)}") from None


for _k in _BUILTIN:
    register(_k)
