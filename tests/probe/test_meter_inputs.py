"""Bad numbers into the box meter: each is refused at the entry with :class:`MeterInputError`,
which names what is wrong and where, and the command line turns it into one line and exit 2."""

from __future__ import annotations

import math

import pytest
import torch

from witprobe.probe.box_sup import box_sup_bound
from witprobe.probe.errors import MeterInputError, ObserverError


def _row():
    p = torch.tensor([[0.5, 0.3, 0.2]], dtype=torch.float64)
    c = torch.tensor([[0.1, 0.2, 0.05]], dtype=torch.float64)
    return p, c


@pytest.mark.parametrize("which, value, message", [
    ("c", math.inf, "an infinite radius (inf) at index (0, 1)"),
    ("c", -math.inf, "an infinite radius (-inf) at index (0, 1)"),
    ("c", math.nan, "a NaN radius (nan) at index (0, 1)"),
    ("c", -0.01, "a negative radius (-0.01) at index (0, 1)"),
    ("p", math.nan, "a NaN probability (nan) at index (0, 1)"),
], ids=["inf-radius", "minus-inf-radius", "nan-radius", "negative-radius", "nan-probability"])
def test_box_sup_bound_refuses_bad_numbers_at_the_entry(which, value, message):
    p, c = _row()
    (p if which == "p" else c)[0, 1] = value
    with pytest.raises(MeterInputError) as info:
        box_sup_bound(p, c)
    assert message in str(info.value)
    assert isinstance(info.value, ObserverError)  # the observer's fail-closed family


def test_box_sup_bound_still_accepts_good_numbers():
    p, c = _row()
    out = box_sup_bound(p, c)
    assert out.shape == (1,) and 0 <= float(out[0]) <= math.tanh(0.2 / 2) * (1 + 1e-12)
    c[0, 0] = 0.0  # a zero radius is fine
    assert torch.isfinite(box_sup_bound(p, c)).all()


def test_the_cli_reports_a_meter_input_error_on_one_line_with_exit_2(tmp_path, monkeypatch, capsys):
    import witprobe.certify.measure as measure_mod
    import witprobe.models.zoo as zoo
    from witprobe.certify.cli import main

    def bad_measure(*a, **k):
        p, c = _row()
        c[0, 2] = math.inf
        box_sup_bound(p, c)

    monkeypatch.setattr(zoo, "check_model_ref", lambda ref: None)
    monkeypatch.setattr(zoo, "load_model", lambda ref: object())
    monkeypatch.setattr(measure_mod, "check_compatible", lambda cfg, loaded, codec=None: None)
    monkeypatch.setattr(measure_mod, "measure", bad_measure)
    code = main(["run", "--out", str(tmp_path / "r"), "--coq", "off", "--lean", "off", "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith("error: cannot meter this run: box_sup_bound: an infinite radius (inf) at index (0, 2)")
