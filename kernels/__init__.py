"""Triton kernels (importable as ``witprobe.kernels``).

Every kernel here has a torch reference in ``witprobe`` that is its specification, and an
equivalence test against it (``tests/kernels``):

| module | kernel | specification |
|---|---|---|
| ``band_meter`` | fused band-witness meter, folds into a packed stat block | ``witprobe.probe.band_meter`` |
| ``latent_witness`` | fused latent (MLA) Tier-A per-key bound | ``witprobe.probe.meters_latent`` |
| ``packed`` | packed int4/int6 pack and unpack with block-Hadamard | ``witprobe.memory.packed`` |
| ``sr_write`` | stochastic-rounding write with counter-based uniforms | ``witprobe.memory.sr_grid`` |

This package imports nothing heavy itself: ``triton`` (the optional ``kernels`` extra) is imported
only by the kernel modules, so the core package works without it. On a machine without a GPU, set
``TRITON_INTERPRET=1`` before importing a kernel module (Triton reads it at decoration time); on a
GPU, leave it unset.
"""
