"""Triton kernels (importable as ``witprobe.kernels``).

Every kernel here has a torch reference in :mod:`witprobe.probe.meters` (or another
``witprobe`` module) that is its specification, and an equivalence test against it. On a machine
without a GPU, set ``TRITON_INTERPRET=1`` before importing a kernel module.
"""
