import Witprobe.Tier
import Witprobe.Metric
import Witprobe.Contract
import Witprobe.ExpBound
import Witprobe.Transfer
import Witprobe.Chain
import Witprobe.NegTests
import Witprobe.ListSum
import Witprobe.MulAC
import Witprobe.Bridges
import Witprobe.Budget
import Witprobe.Sentinel
import Witprobe.Ville
import Witprobe.Slots
import Witprobe.KeyRule
import Witprobe.Adjudication

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
* `Witprobe.ListSum`: finite sums and cancellation facts used below.
* `Witprobe.MulAC`: named rearrangements of products (no `ac_rfl`).
* `Witprobe.Bridges`: exp-free bridges (Hoelder score bridge, ratio to TV, pooling in both
  forms, selection, rank-prefix stability, oscillation).
* `Witprobe.Budget`: telescoping weights, the two-layer budget, the union bound on a finite
  weighted sample space, shared-read soundness.
* `Witprobe.Sentinel`: detection latency of the sampling sentinel, decided.
* `Witprobe.Ville`: Ville's inequality on a finite sample space and the e-process corollary.
* `Witprobe.Slots`: slot states, generations and owners; freshness under write-site invalidation.
* `Witprobe.KeyRule`: the aggregation-key rule.
* `Witprobe.Adjudication`: the adjudication calculus and the two rejected inferences.

Per-run obligation files (`artifacts/**/obligations/*.lean`, written by
`python -m witprobe.certify run`) import this module and prove `cert.check = true` by `decide`.
The audit of axioms is the separate target `WitprobeAudit` (`lake build WitprobeAudit`).
-/
