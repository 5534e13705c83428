"""The claim theorem of every non-vacuous form of every layer of a run, in every shape.

``derive`` states one theorem per layer (its best form, in its memory class's shape). Tests that
must see every shape the renderers can emit (Coq and Lean alike) use :func:`every_form`: the
theorem of each non-vacuous form (centred, plain, e-form) in the layer's memory class and at score
level, named ``<tag><theorem>_<form>_<shape>``.
"""

from __future__ import annotations

import pytest

import witprobe.certify.derive as derive_mod
from witprobe.calculus import bridges, rounding
from witprobe.formal.claim_theorems import ClaimTheorem, claim_theorem


def every_form(run: dict, tag: str = "") -> list[ClaimTheorem]:
    """The theorem of every non-vacuous form of every layer, in its memory class and at score level."""
    seen = []
    real = derive_mod.read_chain

    def spy(form, inp, spec=bridges.DENSE_KV):
        chain = real(form, inp, spec)
        seen.append((form, inp, chain))
        return chain

    with pytest.MonkeyPatch.context() as mp:  # watch derive build every form's chain
        mp.setattr(derive_mod, "read_chain", spy)
        deriv = derive_mod.derive(run)
    attn = [c for c in deriv.claims if c.kind == "attn_tv"]
    assert len(seen) == 3 * len(attn)
    out: dict[str, ClaimTheorem] = {}
    for k, claim in enumerate(attn):
        for form, inp, chain in seen[3 * k:3 * k + 3]:
            ev = chain.evaluate(0)
            if ev.vacuous:
                continue
            for mclass in (claim.memory_class, "score_level"):
                th = claim_theorem(claim.id, form, mclass, ev, rounding.to_units_up(inp.q_coef))
                name = f"{tag}{th.theorem}_{form}_{th.shape}"
                out[name] = ClaimTheorem(**{**th.__dict__, "theorem": name})
    return list(out.values())


