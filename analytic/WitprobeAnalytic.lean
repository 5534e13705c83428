import WitprobeAnalytic.Sum
import WitprobeAnalytic.Metric
import WitprobeAnalytic.ExpLn
import WitprobeAnalytic.Softmax
import WitprobeAnalytic.SoftmaxTV
import WitprobeAnalytic.Claims
import WitprobeAnalytic.Cited
import WitprobeAnalytic.ExpBound
import WitprobeAnalytic.TanhBound
import WitprobeAnalytic.ScoreBridge
import WitprobeAnalytic.BandWitness
import WitprobeAnalytic.ClaimsBanded
import WitprobeAnalytic.ClaimsSink
import WitprobeAnalytic.LatentBridge
import WitprobeAnalytic.ClaimsLatent
import WitprobeAnalytic.Pooling
import WitprobeAnalytic.Selection
import WitprobeAnalytic.Budget
import WitprobeAnalytic.Sentinel
import WitprobeAnalytic.Ville
import WitprobeAnalytic.Chain
import WitprobeAnalytic.InnerBridge
import WitprobeAnalytic.BoxSup
import WitprobeAnalytic.QueryAligned
import WitprobeAnalytic.BoxQueryAligned

/-!
# WitprobeAnalytic: the real-analysis library, mirroring the Coq library

Optional, Mathlib-based, never compiled yet (see `LEAN_STATUS.md`). The files `Sum`, `ExpLn`,
`Softmax`, `SoftmaxTV`, `Claims`, `ScoreBridge`, `BandWitness`, `ClaimsBanded`, `ClaimsSink`, `LatentBridge`,
`ClaimsLatent`, `Pooling`, `Selection`, `Budget` (telescoping part), `Sentinel` (round counts), `Ville`, `Metric`, `Chain`, `BoxSup`, `QueryAligned` and `BoxQueryAligned` mirror `coq/Witprobe/*.v` of the same name: same theorem
names, same hypotheses and conclusions, over `ℕ → ℝ` with `Finset.range n` sums
(`tests/test_kernel_inventory.py` checks the correspondence against
`tests/data/kernel_inventory.json`). The Coq files are the ones compiled by a kernel here.

* Mirrors: `WitprobeAnalytic.tv_le_tanh_osc`, `tv_le_tanh_radius`, `tv_le_eform`, `tv_le_plain`,
  `tv_le_affine`, the sink forms, and the per-claim lemmas `centred_claim`, `plain_claim`,
  `eform_claim` (+ sink forms), the banded score bridges `score_bridge_banded`,
  `score_bridge_plain`, `cauchy_schwarz`, and the dense-KV claims `centred_banded_claim`,
  `plain_banded_claim`, `eform_banded_claim`, the DeepSeek-V4 sink claims `centred_sink_banded_claim`,
  `plain_sink_banded_claim`, `eform_sink_banded_claim`, the latent claims (incl. `plain_latent_claim`), the box bound `tv_le_box`, `box_banded_claim`, and the query-aligned bridge and box
  bound `qa_bridge`, `qa_score_bridge`, `box_qa_or_banded_claim`.
* Lean only: `exp_le_expUpper`, `expUpperOk_sound` (the rational exp bound the core library
  decides), `exp_le_taylor` and `tanh_half_le_of_*` (numeric side conditions of the per-run
  Lean theorems), the inner-product score bridges of `InnerBridge`, and `Cited` (names the
  Python side cites).
-/
