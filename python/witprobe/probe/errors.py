"""Errors of the probe layer, in a module of their own so that every probe module can raise them
without importing the observer (which imports them all)."""

from __future__ import annotations


class ObserverError(RuntimeError):
    """The observer saw something it cannot attribute or meter (fail closed)."""


class MeterInputError(ObserverError):
    """A meter was handed numbers it cannot bound (NaN, an infinite or negative radius, a NaN
    probability); the command line reports it on one line and exits 2."""
