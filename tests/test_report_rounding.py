"""Printed bounds are rounded up from their exact values, as the table's footnote says."""

from fractions import Fraction

from witprobe.calculus import rounding
from witprobe.certify.report import _bound


def _b(x: Fraction) -> dict[str, str]:
    return {"decimal_up": rounding.decimal_up(x, 6), "exact": rounding.fraction_text(x)}


def test_bounds_print_rounded_up_never_truncated():
    assert _bound(_b(Fraction(14450001, 10 ** 8))) == "0.1446"
    assert _bound(_b(Fraction(1445, 10 ** 4))) == "0.1445"
    assert _bound(_b(Fraction(10554762278356122, 10 ** 16)), vacuous=True) == "1.0555*"
    for num in (1, 99999, 123456789, 2 ** 40 + 1):
        x = Fraction(num, 2 ** 41)
        assert Fraction(_bound(_b(x))) >= x
