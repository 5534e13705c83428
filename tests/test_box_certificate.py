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


DISPATCH = ("default", "avx2", None)  # torch's CPU dispatch levels forced here (None: the machine's own)


def _under_dispatch(cap: str | None, script: str, *args: str) -> str:
    """``script``'s stdout (stripped), run in a fresh interpreter with ``ATEN_CPU_CAPABILITY=cap``."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    env.pop("ATEN_CPU_CAPABILITY", None)
    if cap is not None:
        env["ATEN_CPU_CAPABILITY"] = cap
    done = subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


_HINTS_SCRIPT = r"""
import hashlib, random, sys, torch
from witprobe.certify import box_certificate as bc
torch.set_num_threads(int(sys.argv[1]))
rng = random.Random(7)
rows = []
for i in range(600):  # every width from 2 to 65 buckets (heavy key included) and every grid the meter uses
    width, k = 2 + i % 64, (1, 2, 4, 8, 16)[i % 5]
    mass = [rng.random() ** 3 for _ in range(width)]
    rad = [rng.choice([0.0, rng.random() * 0.01, rng.random() * 3, rng.random() * 40]) for _ in range(width)]
    rows.append(bc._RowNumbers([0.0] * width, [0.0] * width, [0.0] * width, mass, rad, k))
print(hashlib.sha256(repr(bc._hints(rows)).encode()).hexdigest())
"""


def test_certificate_hints_are_the_same_bits_on_every_cpu_and_thread_count():
    """The hints rendered into ``run.v`` must not depend on the machine: ``certify check`` on
    another machine re-renders the file byte for byte. torch's vectorized ``exp``/``pow`` and its
    reductions are not portable (the scalar remainder of a vector loop, whose length depends on
    the CPU's vector width and the thread split, uses another implementation; a run made on an
    AVX2 machine failed its check on an AVX-512 one). Here torch's CPU dispatch is forced to each
    level and the thread count varied: the hints of 600 rows must hash the same."""
    seen = {(cap, threads): _under_dispatch(cap, _HINTS_SCRIPT, str(threads))
            for cap in DISPATCH for threads in (1, 2)}
    assert len(set(seen.values())) == 1, seen


_RENDER_SCRIPT = r"""
import hashlib, json, sys
from pathlib import Path
from witprobe.certify.derive import derive
from witprobe.formal.render_coq import render_coq
text = Path(sys.argv[1]).read_text(encoding="utf-8")
theorems = derive(json.loads(text)).theorems
print(hashlib.sha256(render_coq(theorems, hashlib.sha256(text.encode()).hexdigest()).encode()).hexdigest())
"""


def test_a_committed_run_v_renders_byte_for_byte_at_every_cpu_dispatch_level():
    """The whole rendering path, not only the hints: a committed run directory's ``run.v`` (one with
    shipped box rows) is rendered again from its ``run.json`` with torch's CPU dispatch forced to
    ``default`` and ``avx2`` and left native; each must equal the committed file."""
    import hashlib

    art = Path(__file__).resolve().parents[1] / "artifacts" / "coverage" / "kda-int8"
    committed = hashlib.sha256((art / "obligations" / "run.v").read_bytes()).hexdigest()
    assert "Bucket" in (art / "obligations" / "run.v").read_text()  # box rows are shipped
    for cap in DISPATCH:
        assert _under_dispatch(cap, _RENDER_SCRIPT, str(art / "run.json")) == committed, cap
