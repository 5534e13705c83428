import Witprobe.Tier
import Witprobe.Metric
import Witprobe.Contract
import Witprobe.ExpBound
import Witprobe.Transfer
import Witprobe.Chain
import Witprobe.NegTests

/-!
# Witprobe: the proof layer

Core Lean 4 only (no Mathlib). Modules:

* `Witprobe.Tier`: evidence tiers and the meet (weakest link).
* `Witprobe.Metric`: error metrics as type indices.
* `Witprobe.Contract`: affine contracts, composition and its soundness.
* `Witprobe.ExpBound`: the decidable rational upper bound on `exp`.
* `Witprobe.Transfer`: the monotone softmax bridges into TV, in units.
* `Witprobe.Chain`: typed chains, erasure, and the per-run `ChainCert.check`.
* `Witprobe.NegTests`: compositions pinned as not elaborating.

Per-run obligation files (`artifacts/**/obligations/*.lean`, written by
`python -m witprobe.certify run`) import this module and prove `cert.check = true` by `decide`.
-/
