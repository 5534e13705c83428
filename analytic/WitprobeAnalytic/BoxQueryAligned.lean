import WitprobeAnalytic.BoxSup
import WitprobeAnalytic.QueryAligned

/-!
# The box bound over query-aligned radii (mirror of `coq/Witprobe/BoxQueryAligned.v`)

The box theorem `tv_le_box` needs per-key radii `r_t ≥ |s_t − s'_t|`. The banded score bridge gives
one radius, the query-aligned bridge (`qa_score_bridge`) another from a per-key decomposition
`k_t − k'_t = U a_t + rr_t` and any vector `b`. Either is sound, so the meter may take the smaller
of the two for each key.

Every theorem has the name, hypotheses and conclusion of the Coq lemma of the same name. Main
results: `box_qa_claim`, `flat_score_bridge_banded`, `box_qa_or_banded_claim` (the per-run
theorem's lemma). Not yet mirrored (pending in the inventory): the counterexample
`box_qa_needs_decomposition`.
-/

namespace WitprobeAnalytic

/-- The per-run claim shape with query-aligned radii. -/
theorem box_qa_claim (B : ℝ) :
    ∀ (n d rk : ℕ) (U : ℕ → ℕ → ℝ) (scale : ℝ) (q b : ℕ → ℝ) (k k' a rr : ℕ → ℕ → ℝ)
        (r : ℕ → ℝ),
      0 < n →
      0 ≤ scale →
      (∀ t, t < n → ∀ i, i < d → k t i - k' t i = matvec rk U (a t) i + rr t i) →
      (∀ t, t < n → scale * qa_radius d rk U q (a t) (rr t) b ≤ r t) →
      box_certificate n (softmax n (fun t => scale * dot d q (k' t))) r B →
      tv n (softmax n (fun t => scale * dot d q (k t))) (softmax n (fun t => scale * dot d q (k' t))) ≤ B :=
  fun n d rk U scale q b k k' a rr r hn hs hdec hr hc =>
    tv_le_box n (fun t => scale * dot d q (k t)) (fun t => scale * dot d q (k' t)) r B hn
      (fun t ht => le_trans (qa_score_bridge d rk U scale q (k t) (k' t) (a t) (rr t) b hs (hdec t ht))
        (hr t ht)) hc

/-- The banded radius of flat vectors, through their band split. -/
theorem flat_score_bridge_banded (nb : ℕ) (w : ℕ → ℕ) (scale : ℝ) (q kt kt' : ℕ → ℝ) :
    0 ≤ scale →
    |scale * dot (offset w nb) q kt - scale * dot (offset w nb) q kt'|
      ≤ scale * banded_witness nb w (band_split w q) (bdiff (band_split w kt) (band_split w kt')) := by
  intro hs
  rw [← bdot_flat nb w q kt, ← bdot_flat nb w q kt']
  exact score_bridge_banded nb w (band_split w q) (band_split w kt) (band_split w kt') scale hs

/-- Each key's radius covers its query-aligned or its banded radius: the meter's `min`. -/
theorem box_qa_or_banded_claim (B : ℝ) :
    ∀ (n nb rk : ℕ) (w : ℕ → ℕ) (U : ℕ → ℕ → ℝ) (scale : ℝ) (q b : ℕ → ℝ)
        (k k' a rr : ℕ → ℕ → ℝ) (r : ℕ → ℝ),
      0 < n →
      0 ≤ scale →
      (∀ t, t < n → ∀ i, i < offset w nb → k t i - k' t i = matvec rk U (a t) i + rr t i) →
      (∀ t, t < n →
        scale * qa_radius (offset w nb) rk U q (a t) (rr t) b ≤ r t
        ∨ scale * banded_witness nb w (band_split w q) (bdiff (band_split w (k t)) (band_split w (k' t))) ≤ r t) →
      box_certificate n (softmax n (fun t => scale * dot (offset w nb) q (k' t))) r B →
      tv n (softmax n (fun t => scale * dot (offset w nb) q (k t)))
        (softmax n (fun t => scale * dot (offset w nb) q (k' t))) ≤ B := by
  intro n nb rk w U scale q b k k' a rr r hn hs hdec hr hc
  refine tv_le_box n (fun t => scale * dot (offset w nb) q (k t)) (fun t => scale * dot (offset w nb) q (k' t))
    r B hn ?_ hc
  intro t ht
  show |scale * dot (offset w nb) q (k t) - scale * dot (offset w nb) q (k' t)| ≤ r t
  rcases hr t ht with hq | hb
  · exact le_trans (qa_score_bridge (offset w nb) rk U scale q (k t) (k' t) (a t) (rr t) b hs (hdec t ht)) hq
  · exact le_trans (flat_score_bridge_banded nb w scale q (k t) (k' t) hs) hb

end WitprobeAnalytic
