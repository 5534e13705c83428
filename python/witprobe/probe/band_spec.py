"""What the band meter measures (:class:`BandMeterSpec`), its error and its scale floor.

The specification shared by the torch meter (:mod:`witprobe.probe.band_meter`) and the fused
kernel (:mod:`witprobe.kernels.band_meter`): the meter dispatches to the kernel, so the kernel
imports the specification from here, never the meter.
"""

from __future__ import annotations

from dataclasses import dataclass

SCALE_FLOOR = 1e-30


class MeterError(ValueError):
    """A meter was configured or applied wrongly (the message names what)."""


@dataclass(frozen=True)
class BandMeterSpec:
    """What the band meter measures.

    Parameters
    ----------
    bands:
        Contiguous bands per entry; must divide the entry dimension.
    bits:
        Code widths of the shadow quantizers, each in ``[2, 8]``, distinct. The paper's always-on
        configuration uses one (``(8,)``); the fused kernel accepts at most two.
    """

    bands: int = 4
    bits: tuple[int, ...] = (8,)

    def __post_init__(self) -> None:
        if not isinstance(self.bands, int) or self.bands < 1:
            raise MeterError(f"band meter: bands must be a positive integer, got {self.bands!r}")
        if not self.bits or len(set(self.bits)) != len(self.bits):
            raise MeterError(f"band meter: bits must be a nonempty tuple of distinct widths, got {self.bits!r}")
        for b in self.bits:
            if not isinstance(b, int) or not 2 <= b <= 8:
                raise MeterError(f"band meter: every code width must be an integer in [2, 8], got {b!r}")

    @staticmethod
    def qmax(bits: int) -> int:
        return (1 << (bits - 1)) - 1

    @property
    def stat_keys(self) -> tuple[str, ...]:
        """Statistic keys in storage order: ``x_norm``, then per quantizer wit, true, rel, tight."""
        keys = ["x_norm"]
        for b in self.bits:
            keys += [f"wit_int{b}", f"true_int{b}", f"rel_int{b}", f"tight_int{b}"]
        return tuple(keys)

    @property
    def counter_keys(self) -> tuple[str, ...]:
        """Counter keys in storage order: per quantizer viol_low, viol_high, zero_residual."""
        keys: list[str] = []
        for b in self.bits:
            keys += [f"viol_low_int{b}", f"viol_high_int{b}", f"zero_residual_int{b}"]
        return tuple(keys)

    def check_dim(self, d: int) -> None:
        if d % self.bands:
            raise MeterError(f"band meter: {self.bands} bands do not divide the entry dimension {d}")
