import WitprobeAnalytic.SoftmaxTV

/-!
# Bridge names cited by the Python side (Lean only)

`python/witprobe/calculus/contracts.py` and the committed certificates cite
`WitprobeAnalytic.softmax_tv_bridge` and `WitprobeAnalytic.tv_le_tanh` for the plain and centred
transfers. They are one-line corollaries of the mirrored Coq theorems `tv_le_plain` and
`tv_le_tanh_osc` (`WitprobeAnalytic.SoftmaxTV`); `tv_le_eform` is cited directly.

Main results:
* `softmax_tv_bridge`: `|s_t − s'_t| ≤ ε` for `t < n` gives
  `TV(softmax s', softmax s) ≤ (e^{2ε} − 1)/2` (served first, as the runtime reads it).
* `tv_le_tanh`: `m ≤ s_t − s'_t ≤ M` for `t < n` gives `TV ≤ tanh ((M − m)/4)`.
-/

namespace WitprobeAnalytic

theorem softmax_tv_bridge (n : ℕ) (s s' : ℕ → ℝ) (eps : ℝ) (he : 0 ≤ eps)
    (hd : ∀ t, t < n → |s t - s' t| ≤ eps) :
    tv n (softmax n s') (softmax n s) ≤ 2⁻¹ * (Real.exp (2 * eps) - 1) := by
  rw [tv_sym]
  exact tv_le_plain n s s' eps he hd

theorem tv_le_tanh (n : ℕ) (s s' : ℕ → ℝ) (m M : ℝ) (hmM : m ≤ M)
    (hd : ∀ t, t < n → m ≤ s t - s' t ∧ s t - s' t ≤ M) :
    tv n (softmax n s) (softmax n s') ≤ tanh ((M - m) / 4) :=
  tv_le_tanh_osc n s s' m M hmM hd

end WitprobeAnalytic
