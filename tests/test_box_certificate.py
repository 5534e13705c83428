"""The checker data of a layer's shipped rows (:mod:`witprobe.certify.box_certificate`): the
hints are computed for a whole layer in batches (one per row shape), and each row's literal is
bit for bit the one the row gets alone, so a committed ``run.v`` re-derives to the same text."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import pytest

from witprobe.calculus import rounding
from witprobe.certify import box_certificate as bc
from witprobe.certify.run_record import parse_run

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("artifact, form", [("coverage/smollm2-int8", "boxsup"),
                                            ("query_aligned/smollm2-int8-qa48", "qa_boxsup")])
def test_a_layers_batched_literals_are_each_rows_own(artifact, form):
    run = parse_run(json.loads((ROOT / "artifacts" / artifact / "run.json").read_text()))
    layer = max(run.layers, key=lambda x: len(x.box_rows[form].rows) if x.box_rows and form in x.box_rows else 0)
    rows = layer.box_rows[form]
    shapes = {(len(r.buckets), r.intervals) for r in rows.rows}
    assert len(rows.rows) > 20 and len(shapes) > 1, "the layer must mix row shapes for the batching to matter"
    rel, keys = Fraction(1, 2**40), 512
    data = bc.layer_data(rows, rel, keys, "t", Fraction(0))  # bound 0: every kept row is shipped
    assert data.shipped == len(rows.rows)
    tu = keys * bc.U64
    rel_f = math.nextafter(float(rel) + tu / (1 - tu), math.inf) * (1 + 2.0 ** -40)  # as layer_data widens it
    alone = [bc.row_literal(r, rel_f, bc.UNDERFLOW * keys, f"t.rows[{i}]") for i, r in enumerate(rows.rows)]
    assert data.rows_coq == "[" + ";\n  ".join(text for text, _ in alone) + "]"
    assert data.literals == sum(n for _, n in alone)
    assert data.cap_units == rounding.to_units_up(rounding.up(rows.dropped_c_max) * (1 + Fraction(bc.RADIUS_MARGIN)))
