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


def test_stored_decimal_upper_bounds_print_rounded_up():
    """The output and eviction tables print stored decimal bounds (TV term, value term, the
    operator-norm bound, RHO) rounded up: '11.170875' at 4 places is 11.1709, never 11.1708."""
    from witprobe.certify.report import _up

    assert _up("11.170875", 4) == "11.1709"
    assert _up("11.1700", 4) == "11.1700"
    assert _up("3/7", 6) == "0.428572"
    assert _up(None, 4) == "-" and _up("", 4) == "-"
    for text in ("0.300397", "0.0068991", "296.30001", "1/3"):
        assert Fraction(_up(text, 4)) >= Fraction(text)
