import WitprobeAnalytic.ExpBound
import WitprobeAnalytic.ScoreBridge
import WitprobeAnalytic.SoftmaxTV

/-!
# WitprobeAnalytic: the real-analysis meaning of the bridges

Optional, Mathlib-based. The core library `Witprobe` decides integer inequalities per run; the
theorems here say what those inequalities mean over the reals.

* `WitprobeAnalytic.exp_le_expUpper`, `WitprobeAnalytic.expUpperOk_sound`: the rational upper
  bound on `exp` that `Witprobe.expUpperOk` decides.
* `WitprobeAnalytic.band_witness_ge_residual`, `WitprobeAnalytic.score_bridge`,
  `WitprobeAnalytic.score_bridge_banded`: storage witness and score bridges.
* `WitprobeAnalytic.softmax_tv_bridge`, `WitprobeAnalytic.tv_le_tanh`,
  `WitprobeAnalytic.tv_le_eform`: the softmax bridges into total variation.
-/
