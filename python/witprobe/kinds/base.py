"""The record of one memory kind: everything witprobe needs to know about a layer's memory.

A *memory kind* is how one decoder layer stores what it later reads (dense K/V, an MLA latent, a
recurrent state, a DeepSeek-V4 window with compressed entries ...); it names the witness layer
that serves it and is the ``memory_class`` of a ``run.json`` layer. A *memory class* is the
paper's taxonomy (section 1, Table 1): ``plain_kv``, ``latent_kv``, ``sparse_selector``,
``recurrent_state``; one kind belongs to one or more classes (a DSA layer writes a latent KV cache
and a sparse selector's keys). The coverage table has one row per class.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from witprobe.calculus.bridges import EntrySpec
from witprobe.self_checks import EVICT_CHECKS, OUTPUT_CHECKS, write_counters

MEMORY_CLASSES = ("plain_kv", "latent_kv", "sparse_selector", "recurrent_state")
"""The four memory classes of the paper (section 1): dense KV, latent KV (MLA), learned sparse
selector, recurrent / linear-attention state."""

THEOREM_SHAPES = ("banded", "latent", "sink", "score")
HOOKS = ("indexer", "pages", "decay")


class LayoutError(ValueError):
    """The model's memory layout is not one witprobe knows how to witness."""


@dataclass(frozen=True)
class BuildContext:
    """What a witness layer is built from: layer index, text config, codec, bands, recorder, model."""

    layer_idx: int
    config: Any
    codec: Any  # witprobe.memory.codecs.Codec
    bands: int
    compress_values: bool
    recorder: Any  # witprobe.probe.witness_cache.WriteRecorder
    model: Any = None


@dataclass(frozen=True)
class MemoryKind:
    """One memory kind (one witness-layer class) and what every consumer needs to know about it.

    Attributes
    ----------
    name:
        The ``memory_class`` of a ``run.json`` layer (``dense_kv``, ``latent``, ...).
    classes:
        The paper's memory classes (:data:`MEMORY_CLASSES`) this kind writes, primary first.
    layer_type:
        The ``config.layer_types`` entry it serves.
    build:
        ``build(ctx) -> witness layer`` (:class:`BuildContext`).
    write_tensors:
        The stored tensors metered at every write; the first is the main one (the coverage
        headline and the layer readings). Each carries the write self-checks of
        :mod:`witprobe.self_checks`.
    read_checks:
        The other self-check counters every layer of this kind must carry (a missing one fails
        closed).
    score:
        The entry specification of the read chain's bridges; ``None``: the kind has no attention
        reads (it is observed through its state writes, and claims nothing certified).
    theorem_shape:
        The Coq theorem template of its claims (:mod:`witprobe.formal.claim_theorems`).
    score_components:
        Additive parts of the score error (1; 2 for a latent: nope and rope).
    model_types:
        ``config.model_type`` values this kind is restricted to (empty: any model without its own
        kinds).
    latent_cache:
        Whether the model must cache latents (``kv_lora_rank`` set: True; unset: False; either: None).
    selection:
        A Select stage (DSA indexer or V4 page selector): selection claims.
    pooling:
        Block pooling of compressed entries: pooling claim.
    hook:
        Model hooks ``certify run`` must find one of per layer of this kind (:data:`HOOKS`).
    bands_divide_head_dim:
        The codec's band count must divide the model's head dimension.
    """

    name: str
    classes: tuple[str, ...]
    layer_type: str
    build: Callable[[BuildContext], Any]
    write_tensors: tuple[str, ...]
    read_checks: tuple[str, ...] = ()
    score: EntrySpec | None = None
    theorem_shape: str | None = None
    score_components: int = 1
    model_types: tuple[str, ...] = ()
    latent_cache: bool | None = None
    selection: bool = False
    pooling: bool = False
    hook: str | None = None
    bands_divide_head_dim: bool = False

    def __post_init__(self) -> None:
        problems = []
        if not self.classes or any(c not in MEMORY_CLASSES for c in self.classes):
            problems.append(f"classes {self.classes} must be drawn from {MEMORY_CLASSES}")
        if not self.write_tensors:
            problems.append("at least one write tensor is needed")
        if (self.score is None) != (self.theorem_shape is None):
            problems.append("a kind with reads has a score spec and a theorem shape; one without has neither")
        if self.theorem_shape is not None and self.theorem_shape not in THEOREM_SHAPES:
            problems.append(f"theorem_shape {self.theorem_shape!r} is not one of {THEOREM_SHAPES}")
        if self.hook is not None and self.hook not in HOOKS:
            problems.append(f"hook {self.hook!r} is not one of {HOOKS}")
        if problems:
            raise ValueError(f"memory kind {self.name}: " + "; ".join(problems))

    @property
    def main_tensor(self) -> str:
        return self.write_tensors[0]

    @property
    def required_counters(self) -> tuple[str, ...]:
        """The self-check counters every layer of this kind must carry: write ones first."""
        return tuple(n for t in self.write_tensors for n in write_counters(t)) + self.read_checks

    @property
    def reads(self) -> bool:
        """Whether layers of this kind are observed through attention reads (else state writes)."""
        return self.score is not None


ROW_CHECKS = ("rows_plain_beaten", "rows_centred_beaten", "rows_eform_beaten")
SELECTION_CHECKS = ("indexer_recon_mismatch", "sel_flip_in_witness_cert", "sel_mass_bound_beaten",
                    "rows_total_beaten_on_certified")


BOXSUP_CHECK = "rows_boxsup_beaten"
QA_CHECKS = ("keys_qa_radius_beaten", "rows_qa_centred_beaten", "rows_qa_boxsup_beaten")
QA_SHAPES = ("banded",)  # theorem shapes whose reads meter the query-aligned witness (dense KV)


def layer_required_counters(kind: MemoryKind, layer: Any, box_sup: bool,
                            query_aligned: bool = False) -> tuple[str, ...]:
    """Every self-check counter one ``run.json`` layer must carry (a missing one fails closed).

    ``layer`` is a :class:`witprobe.certify.run_record.LayerRecord` (only its ``read`` and
    ``o_proj`` are read; it is not imported here: the record sits in a higher layer).

    The kind's own counters (:attr:`MemoryKind.required_counters`), and those of the meters the
    layer ran: the box meter on a layer with reads when the run metered it (``box_sup``: the run
    config), the attention-output meter where it read rows (``read.out_rows``; the projected one
    where the layer records ``o_proj``), and the eviction meter where it read rows
    (``read.evict_rows`` present), and the query-aligned meter's on dense KV when the run stored
    that witness (``query_aligned``: ``config.query_aligned`` present). The one list derivation,
    coverage and the report all read.
    """
    read = layer.read
    names = list(kind.required_counters)
    if kind.reads and box_sup:
        names.append(BOXSUP_CHECK)
    if query_aligned and kind.theorem_shape in QA_SHAPES:
        names += QA_CHECKS
    if read.get("out_rows"):
        names += [c.pattern for c in OUTPUT_CHECKS if c.pattern != "rows_out_proj_beaten" or layer.o_proj is not None]
    if "evict_rows" in read:
        names += [c.pattern for c in EVICT_CHECKS]
    return tuple(names)
