import Witprobe.Contract
import Witprobe.ListSum
import Witprobe.MulAC

/-!
# Exp-free metric bridges

The parts of the paper's bridges that need no real analysis, stated over integers (scores,
fixed-point entries) or naturals (probability masses in fixed-point units). The analytic halves
(Cauchy-Schwarz over the reals, the softmax exponential) live in the optional package
`analytic/` (`WitprobeAnalytic.*`).

Main results:
* `Witprobe.dot_natAbs_le` (Hoelder l1-linf): `|⟨q, d⟩| ≤ ‖q‖₁ · max_i |d_i|`, and
  `Witprobe.score_bridge_hoelder`: a key perturbation of at most `M` per coordinate moves the
  score `⟨q, k⟩` by at most `‖q‖₁ · M`.
* `Witprobe.l1dist_le_of_relClose`: if `p'_t` is within a factor `1 ± ρ` of `p_t` for every `t`,
  then `Σ_t |p_t − p'_t| ≤ ρ · Σ_t p_t`; for distributions `TV ≤ ρ/2`
  (`Witprobe.l1dist_le_of_relClose_of_sum`).
* `Witprobe.pool_linf`: pooling lemma, l-infinity form: a convex combination of perturbations,
  each at most `e`, is at most `e` (gain `a_pool = 1`).
* `Witprobe.pool_l2_sq`: pooling lemma, squared l2 form (Cauchy-Schwarz in integers):
  `(Σ_j w_j n_j)² ≤ (Σ_j w_j²) · (Σ_j n_j²)`.
* `Witprobe.selection_l1_eq`, `Witprobe.selectionContract_holds`: selection lemma; the selection
  stage is the additive contract `(a, b) = (1, (m_out + m_in)/2)`.
* `Witprobe.rank_prefix_stable`: a gap `> 2ε` keeps the top-r prefix under any perturbation
  with `max |Δ| ≤ ε`.
* `Witprobe.osc_le_two_linf`: `max_t d_t − min_t d_t ≤ 2 · max_t |d_t|` (the oscillation bridge
  cited by the Python catalogue).

Each rule has a counterexample theorem beside it.
-/

namespace Witprobe

/-! ## Hoelder score bridge -/

/-- Dot product of integer vectors; entries past the shorter vector are ignored. -/
def dot : List Int → List Int → Int
  | [], _ => 0
  | _ :: _, [] => 0
  | a :: as, b :: bs => a * b + dot as bs

/-- `‖q‖₁ = Σ_i |q_i|`. -/
def l1 : List Int → Nat
  | [] => 0
  | a :: as => a.natAbs + l1 as

/-- Every entry has `|d_i| ≤ M`, i.e. `‖d‖_∞ ≤ M`. -/
def AbsAtMost (M : Nat) : List Int → Prop
  | [] => True
  | d :: ds => d.natAbs ≤ M ∧ AbsAtMost M ds

/-- Elementwise difference `k − k'`. -/
def vsub : List Int → List Int → List Int
  | [], _ => []
  | _ :: _, [] => []
  | a :: as, b :: bs => (a - b) :: vsub as bs

/-- Hoelder (l1-linf): `|⟨q, d⟩| ≤ ‖q‖₁ · M` whenever `‖d‖_∞ ≤ M`. -/
theorem dot_natAbs_le (M : Nat) :
    ∀ (q d : List Int), AbsAtMost M d → (dot q d).natAbs ≤ l1 q * M
  | [], _, _ => Nat.zero_le _
  | _ :: _, [], _ => Nat.zero_le _
  | a :: as, b :: bs, h => by
    have hh : b.natAbs ≤ M ∧ AbsAtMost M bs := h
    have ih := dot_natAbs_le M as bs hh.2
    have h3 : a.natAbs * b.natAbs ≤ a.natAbs * M := Nat.mul_le_mul (Nat.le_refl _) hh.1
    show (a * b + dot as bs).natAbs ≤ (a.natAbs + l1 as) * M
    calc (a * b + dot as bs).natAbs
        ≤ (a * b).natAbs + (dot as bs).natAbs := Int.natAbs_add_le _ _
      _ = a.natAbs * b.natAbs + (dot as bs).natAbs := by rw [Int.natAbs_mul]
      _ ≤ a.natAbs * M + l1 as * M := Nat.add_le_add h3 ih
      _ = (a.natAbs + l1 as) * M := (Nat.right_distrib _ _ _).symm

/-- Scores are linear in the key: `⟨q, k⟩ − ⟨q, k'⟩ = ⟨q, k − k'⟩` for keys of equal length. -/
theorem dot_sub_eq_dot_vsub :
    ∀ (q k k' : List Int), k.length = k'.length → dot q k - dot q k' = dot q (vsub k k')
  | [], _, _, _ => by
    show (0 : Int) - 0 = 0
    omega
  | _ :: _, [], [], _ => by
    show (0 : Int) - 0 = 0
    omega
  | _ :: _, [], _ :: bs, h => by
    have h' : 0 = bs.length + 1 := h
    omega
  | _ :: _, _ :: as, [], h => by
    have h' : as.length + 1 = 0 := h
    omega
  | a :: qs, b :: bs, c :: cs, h => by
    have hl : bs.length + 1 = cs.length + 1 := h
    have ih := dot_sub_eq_dot_vsub qs bs cs (by omega)
    have hm : a * (b - c) = a * b - a * c := Int.mul_sub a b c
    show a * b + dot qs bs - (a * c + dot qs cs) = a * (b - c) + dot qs (vsub bs cs)
    omega

/-- Score bridge in integer form: if every key coordinate moves by at most `M`, the score
`⟨q, k⟩` moves by at most `‖q‖₁ · M` (Hoelder; the l2 form is `WitprobeAnalytic.score_bridge`). -/
theorem score_bridge_hoelder (M : Nat) (q k k' : List Int) (hl : k.length = k'.length)
    (hd : AbsAtMost M (vsub k k')) : (dot q k - dot q k').natAbs ≤ l1 q * M := by
  rw [dot_sub_eq_dot_vsub q k k' hl]
  exact dot_natAbs_le M q (vsub k k') hd

/-- Counterexample: the bound uses `‖q‖₁`; `‖q‖_∞` alone (here 1) is too small. -/
theorem score_bridge_needs_l1 : (dot [1, 1] [1, 1]).natAbs = 2 ∧ ¬ ((dot [1, 1] [1, 1]).natAbs ≤ 1 * 1) := by
  decide

/-! ## Probability ratio to L1 / TV -/

/-- `|x − y|` on naturals (truncated subtraction both ways). -/
def absDiff (x y : Nat) : Nat := (x - y) + (y - x)

/-- `Σ_t |p_t − p'_t|`; entries past the shorter list are ignored. -/
def l1dist : List Nat → List Nat → Nat
  | [], _ => 0
  | _ :: _, [] => 0
  | x :: xs, y :: ys => absDiff x y + l1dist xs ys

/-- `p'` is within a factor `1 ± r/S` of `p`, entry by entry (`S·|p_t − p'_t| ≤ r·p_t`);
both lists have the same length. -/
def RelClose (S r : Nat) : List Nat → List Nat → Prop
  | [], [] => True
  | [], _ :: _ => False
  | _ :: _, [] => False
  | x :: xs, y :: ys => S * absDiff x y ≤ r * x ∧ RelClose S r xs ys

/-- Ratio to L1: `S · Σ|p − p'| ≤ r · Σ p` when `p'` is within `1 ± r/S` of `p`. -/
theorem l1dist_le_of_relClose (S r : Nat) :
    ∀ (p p' : List Nat), RelClose S r p p' → S * l1dist p p' ≤ r * sumList p
  | [], [], _ => Nat.zero_le _
  | [], _ :: _, h => False.elim h
  | _ :: _, [], h => False.elim h
  | x :: xs, y :: ys, h => by
    have hh : S * absDiff x y ≤ r * x ∧ RelClose S r xs ys := h
    have ih := l1dist_le_of_relClose S r xs ys hh.2
    have e1 : S * (absDiff x y + l1dist xs ys) = S * absDiff x y + S * l1dist xs ys :=
      Nat.left_distrib _ _ _
    have e2 : r * (x + sumList xs) = r * x + r * sumList xs := Nat.left_distrib _ _ _
    have h1 := hh.1
    show S * (absDiff x y + l1dist xs ys) ≤ r * (x + sumList xs)
    omega

/-- For a distribution in units (`Σ p = S > 0`): `Σ|p − p'| ≤ r`, i.e. `TV ≤ ρ/2` with `ρ = r/S`. -/
theorem l1dist_le_of_relClose_of_sum (S r : Nat) (p p' : List Nat) (hS : 0 < S)
    (hsum : sumList p = S) (h : RelClose S r p p') : l1dist p p' ≤ r := by
  have h1 := l1dist_le_of_relClose S r p p' h
  rw [hsum, Nat.mul_comm r S] at h1
  exact le_of_mul_le_mul_pos hS h1

/-- Counterexample: without the ratio hypothesis the L1 distance is not controlled by `ρ`
(here `ρ = 0` but the distributions differ completely). -/
theorem l1dist_without_ratio : l1dist [1, 0] [0, 1] = 2 ∧ ¬ RelClose 1 0 [1, 0] [0, 1] := by
  refine ⟨by decide, ?_⟩
  intro h
  have hh : 1 * absDiff 1 0 ≤ 0 * 1 ∧ RelClose 1 0 [0] [1] := h
  have h1 : 1 * absDiff 1 0 ≤ 0 * 1 := hh.1
  exact absurd h1 (by decide)

/-! ## Pooling lemma -/

/-- `‖w‖₁` of natural weights viewed as integers is their sum. -/
theorem l1_map_ofNat : ∀ (w : List Nat), l1 (w.map Int.ofNat) = sumList w
  | [] => rfl
  | x :: xs => by
    have ih := l1_map_ofNat xs
    show x + l1 (xs.map Int.ofNat) = x + sumList xs
    rw [ih]

/-- Pooling lemma, l-infinity form: pooling perturbations `Δ_j` with natural weights `w_j`
gives `|Σ_j w_j Δ_j| ≤ (Σ_j w_j) · e` when every `|Δ_j| ≤ e`; divided by the total weight the
pooled error is at most `e` (gain `a_pool = 1`, no assumption on the weights). -/
theorem pool_linf (e : Nat) (w : List Nat) (d : List Int) (h : AbsAtMost e d) :
    (dot (w.map Int.ofNat) d).natAbs ≤ sumList w * e := by
  have h1 := dot_natAbs_le e (w.map Int.ofNat) d h
  rw [l1_map_ofNat w] at h1
  exact h1

/-- Counterexample: the pooled error reaches `(Σ w) · e` when all perturbations align, so the
l-infinity gain 1 cannot be improved without further assumptions. -/
theorem pool_linf_tight : (dot ([1, 1].map Int.ofNat) [3, 3]).natAbs = sumList [1, 1] * 3 := by
  decide

/-- `Σ_j w_j n_j`. -/
def wdot : List Nat → List Nat → Nat
  | [], _ => 0
  | _ :: _, [] => 0
  | a :: as, b :: bs => a * b + wdot as bs

/-- `Σ_j x_j²`. -/
def sqSum : List Nat → Nat
  | [] => 0
  | a :: as => a * a + sqSum as

/-- `2·u·(u + t) ≤ u² + (u + t)²` on naturals. -/
theorem two_mul_le_sq_add_sq_aux (u t : Nat) : 2 * (u * (u + t)) ≤ u * u + (u + t) * (u + t) := by
  have e1 : u * (u + t) = u * u + u * t := Nat.left_distrib u u t
  have e2 : (u + t) * (u + t) = u * (u + t) + t * (u + t) := Nat.right_distrib u t (u + t)
  have e3 : t * (u + t) = t * u + t * t := Nat.left_distrib t u t
  have e4 : t * u = u * t := Nat.mul_comm t u
  omega

/-- `2uv ≤ u² + v²` on naturals. -/
theorem two_mul_le_sq_add_sq (u v : Nat) : 2 * (u * v) ≤ u * u + v * v := by
  by_cases huv : u ≤ v
  · have hex : ∃ t, v = u + t := ⟨v - u, by omega⟩
    cases hex with
    | intro t ht =>
      subst ht
      exact two_mul_le_sq_add_sq_aux u t
  · have hex : ∃ t, u = v + t := ⟨u - v, by omega⟩
    cases hex with
    | intro t ht =>
      subst ht
      have h1 := two_mul_le_sq_add_sq_aux v t
      have e1 : (v + t) * v = v * (v + t) := Nat.mul_comm (v + t) v
      omega

/-- The Cauchy-Schwarz step: `(a x + S)² ≤ (a² + A)(x² + B)` whenever `S² ≤ A B`. -/
theorem cs_step (a x S A B : Nat) (h : S * S ≤ A * B) :
    (a * x + S) * (a * x + S) ≤ (a * a + A) * (x * x + B) := by
  -- the cross term: 2·(a x)·S ≤ a²·B + A·x², proved after multiplying by A
  have cross : 2 * ((a * x) * S) ≤ a * a * B + A * (x * x) := by
    by_cases hA : A = 0
    · subst hA
      have hS : S * S = 0 := by omega
      have hS0 : S = 0 := by
        by_cases hz : S = 0
        · exact hz
        · have h1 : 1 ≤ S := by omega
          have h2 : 1 * 1 ≤ S * S := Nat.mul_le_mul h1 h1
          omega
      subst hS0
      first
        | exact Nat.zero_le _
        | simp only [Nat.mul_zero, Nat.zero_mul, Nat.zero_le]
    · have hApos : 0 < A := by omega
      -- A · (a² B + A x²) = a²·(A B) + (A x)² ≥ (a S)² + (A x)² ≥ 2 (a S)(A x) = A · 2 (a x) S
      have amgm := two_mul_le_sq_add_sq (a * S) (A * x)
      have m1 : a * a * (S * S) ≤ a * a * (A * B) := Nat.mul_le_mul (Nat.le_refl _) h
      have r1 : (a * S) * (a * S) = a * a * (S * S) := mul_mul_mul_swap a S a S
      have r2 : A * (a * a * B + A * (x * x)) = a * a * (A * B) + (A * x) * (A * x) := by
        rw [Nat.left_distrib]
        have q1 : A * (a * a * B) = a * a * (A * B) := Nat.mul_left_comm A (a * a) B
        have q2 : A * (A * (x * x)) = (A * x) * (A * x) :=
          (Nat.mul_assoc A A (x * x)).symm.trans (mul_mul_mul_swap A x A x).symm
        rw [q1, q2]
      have r3 : 2 * ((a * S) * (A * x)) = A * (2 * ((a * x) * S)) := by
        rw [mul_cross_perm a S A x]
        exact Nat.mul_left_comm 2 A (a * x * S)
      have key : A * (2 * ((a * x) * S)) ≤ A * (a * a * B + A * (x * x)) := by
        omega
      exact le_of_mul_le_mul_pos hApos key
  -- expand both squares
  have eL : (a * x + S) * (a * x + S) = (a * x) * (a * x) + 2 * ((a * x) * S) + S * S := by
    have f1 : (a * x + S) * (a * x + S) = (a * x) * (a * x + S) + S * (a * x + S) :=
      Nat.right_distrib _ _ _
    have f2 : (a * x) * (a * x + S) = (a * x) * (a * x) + (a * x) * S := Nat.left_distrib _ _ _
    have f3 : S * (a * x + S) = S * (a * x) + S * S := Nat.left_distrib _ _ _
    have f4 : S * (a * x) = (a * x) * S := Nat.mul_comm _ _
    omega
  have eR : (a * a + A) * (x * x + B)
      = (a * x) * (a * x) + a * a * B + A * (x * x) + A * B := by
    have f1 : (a * a + A) * (x * x + B) = a * a * (x * x + B) + A * (x * x + B) :=
      Nat.right_distrib _ _ _
    have f2 : a * a * (x * x + B) = a * a * (x * x) + a * a * B := Nat.left_distrib _ _ _
    have f3 : A * (x * x + B) = A * (x * x) + A * B := Nat.left_distrib _ _ _
    have f4 : a * a * (x * x) = (a * x) * (a * x) := (mul_mul_mul_swap a x a x).symm
    omega
  omega

/-- Pooling lemma, squared l2 form (Cauchy-Schwarz): with `n_j = ‖Δ_j‖`,
`(Σ_j w_j n_j)² ≤ (Σ_j w_j²) · (Σ_j n_j²)`, so `‖Δc‖ ≤ ‖w‖₂ · e_in` with
`e_in = (Σ_j ‖Δ_j‖²)^{1/2}`; the gain `‖w‖₂` lies in `[1/√B, 1]` only for normalized weights. -/
theorem pool_l2_sq :
    ∀ (w n : List Nat), w.length = n.length →
      wdot w n * wdot w n ≤ sqSum w * sqSum n
  | [], [], _ => Nat.zero_le _
  | [], _ :: bs, h => by
    have h' : 0 = bs.length + 1 := h
    omega
  | _ :: as, [], h => by
    have h' : as.length + 1 = 0 := h
    omega
  | a :: as, x :: xs, h => by
    have hl : as.length + 1 = xs.length + 1 := h
    have ih := pool_l2_sq as xs (by omega)
    show (a * x + wdot as xs) * (a * x + wdot as xs) ≤ (a * a + sqSum as) * (x * x + sqSum xs)
    exact cs_step a x (wdot as xs) (sqSum as) (sqSum xs) ih

/-- Counterexample: the l2 gain is relative to `e_in = (Σ_j ‖Δ_j‖²)^{1/2}`, not to the per-token
error. Four tokens with equal weights (`‖w‖₂ = 1/2` after normalizing by the total 4) and equal
errors 1: the pooled error is `4/4 = 1`, the per-token error, with no attenuation, and
Cauchy-Schwarz is tight. Quoting `‖w‖₂` alone would suggest halving. -/
theorem pool_l2_no_attenuation :
    wdot [1, 1, 1, 1] [1, 1, 1, 1] = 4 * 1 ∧
      wdot [1, 1, 1, 1] [1, 1, 1, 1] * wdot [1, 1, 1, 1] [1, 1, 1, 1]
        = sqSum [1, 1, 1, 1] * sqSum [1, 1, 1, 1] := by
  decide

/-! ## Selection lemma -/

/-- One key of the full key set: whether it is in the original selection `I` and in the
perturbed selection `Î`, and its attention mass under `p` and `p̂` (units). -/
structure SelKey where
  inI : Bool
  inJ : Bool
  p : Nat
  q : Nat

/-- Attention is zero outside its own selection: `p = 0` off `I`, `p̂ = 0` off `Î`. -/
def SelKey.Supported : SelKey → Prop
  | ⟨true, true, _, _⟩ => True
  | ⟨true, false, _, q⟩ => q = 0
  | ⟨false, true, p, _⟩ => p = 0
  | ⟨false, false, p, q⟩ => p = 0 ∧ q = 0

/-- Contribution to `m_out = Σ_{I \ Î} p`. -/
def SelKey.mOut : SelKey → Nat
  | ⟨true, false, p, _⟩ => p
  | ⟨true, true, _, _⟩ => 0
  | ⟨false, true, _, _⟩ => 0
  | ⟨false, false, _, _⟩ => 0

/-- Contribution to `m_in = Σ_{Î \ I} p̂`. -/
def SelKey.mIn : SelKey → Nat
  | ⟨false, true, _, q⟩ => q
  | ⟨true, true, _, _⟩ => 0
  | ⟨true, false, _, _⟩ => 0
  | ⟨false, false, _, _⟩ => 0

/-- Contribution to the common-support term `Σ_{I ∩ Î} |p − p̂|`. -/
def SelKey.common : SelKey → Nat
  | ⟨true, true, p, q⟩ => absDiff p q
  | ⟨true, false, _, _⟩ => 0
  | ⟨false, true, _, _⟩ => 0
  | ⟨false, false, _, _⟩ => 0

/-- Per key: `|p − p̂| = out + in + common` under the support condition. -/
theorem SelKey.absDiff_split : ∀ k : SelKey, k.Supported → absDiff k.p k.q = k.mOut + k.mIn + k.common
  | ⟨true, true, p, q⟩, _ => by
    show absDiff p q = 0 + 0 + absDiff p q
    omega
  | ⟨true, false, p, q⟩, h => by
    have hq : q = 0 := h
    show (p - q) + (q - p) = p + 0 + 0
    omega
  | ⟨false, true, p, q⟩, h => by
    have hp : p = 0 := h
    show (p - q) + (q - p) = 0 + q + 0
    omega
  | ⟨false, false, p, q⟩, h => by
    have hpq : p = 0 ∧ q = 0 := h
    have hp := hpq.1
    have hq := hpq.2
    show (p - q) + (q - p) = 0 + 0 + 0
    omega

/-- Every key satisfies the support condition. -/
def AllSupported : List SelKey → Prop
  | [] => True
  | k :: ks => k.Supported ∧ AllSupported ks

/-- `Σ_k |p_k − p̂_k|` (twice the TV between the two attention distributions). -/
def selL1 : List SelKey → Nat
  | [] => 0
  | k :: ks => absDiff k.p k.q + selL1 ks

/-- `m_out`. -/
def selOut : List SelKey → Nat
  | [] => 0
  | k :: ks => k.mOut + selOut ks

/-- `m_in`. -/
def selIn : List SelKey → Nat
  | [] => 0
  | k :: ks => k.mIn + selIn ks

/-- `Σ_{I ∩ Î} |p − p̂|` (twice the upstream TV on the common support). -/
def selCommon : List SelKey → Nat
  | [] => 0
  | k :: ks => k.common + selCommon ks

/-- Selection lemma (paper eq. s2), exact form: with attention zero outside its selection,
`Σ|p − p̂| = m_out + m_in + Σ_{I∩Î}|p − p̂|`; halving gives
`TV(p, p̂) = ½(m_out + m_in) + ½ Σ_{I∩Î}|p − p̂|`. -/
theorem selection_l1_eq :
    ∀ ks : List SelKey, AllSupported ks → selL1 ks = selOut ks + selIn ks + selCommon ks
  | [], _ => rfl
  | k :: ks, h => by
    have hh : k.Supported ∧ AllSupported ks := h
    have hk := SelKey.absDiff_split k hh.1
    have ih := selection_l1_eq ks hh.2
    show absDiff k.p k.q + selL1 ks
      = (k.mOut + selOut ks) + (k.mIn + selIn ks) + (k.common + selCommon ks)
    omega

/-- The selection stage as an additive contract, in units of `2·TV`: gain 1, offset
`m_out + m_in` (in TV units: `a_S = 1`, `b_S = ½(m_out + m_in)`). It does not amplify. -/
def selectionContract (m : Metric) (mOut mIn : Nat) : Contract m m where
  num := 1
  den := 1
  off := mOut + mIn
  delta := 0
  tier := .certified

/-- The selection contract holds on the common-support error and the output L1. -/
theorem selectionContract_holds (m : Metric) (ks : List SelKey) (h : AllSupported ks) :
    (selectionContract m (selOut ks) (selIn ks)).Holds (selCommon ks) (selL1 ks) := by
  have he := selection_l1_eq ks h
  show 1 * selL1 ks ≤ 1 * selCommon ks + (selOut ks + selIn ks)
  omega

/-- Counterexample: measuring only `m_out` undercounts. Here one key leaves the selection and
another enters; `m_out = 1` alone does not bound the output L1 of `2`. -/
theorem selection_needs_m_in :
    selL1 [⟨true, false, 1, 0⟩, ⟨false, true, 0, 1⟩] = 2 ∧
      selOut [⟨true, false, 1, 0⟩, ⟨false, true, 0, 1⟩] = 1 ∧
      selCommon [⟨true, false, 1, 0⟩, ⟨false, true, 0, 1⟩] = 0 := by
  decide

/-! ## Rank-prefix stability -/

/-- Rank-prefix stability: let every top-r score be `≥ lo` and every other score be `≤ hi`,
with a gap `hi + 2ε < lo`. After any perturbation moving each score by at most `ε`
(pairs `(s, s')`), every perturbed top-r score stays strictly above every other perturbed
score, so the top-r prefix is unchanged. -/
theorem rank_prefix_stable (eps lo hi : Int) (top rest : List (Int × Int))
    (htop : ∀ s ∈ top, lo ≤ s.1 ∧ s.1 - eps ≤ s.2 ∧ s.2 ≤ s.1 + eps)
    (hrest : ∀ s ∈ rest, s.1 ≤ hi ∧ s.1 - eps ≤ s.2 ∧ s.2 ≤ s.1 + eps)
    (hgap : hi + 2 * eps < lo) :
    ∀ s ∈ top, ∀ t ∈ rest, t.2 < s.2 := by
  intro s hs t ht
  have h1 := htop s hs
  have h2 := hrest t ht
  have a1 := h1.1
  have a2 := h1.2.1
  have b1 := h2.1
  have b3 := h2.2.2
  omega

/-- Counterexample: a gap of exactly `2ε` is not enough; scores `2` and `0` with `ε = 1` can
both move to `1`, and the prefix is no longer strictly above the rest. -/
theorem rank_prefix_gap_strict :
    (2 : Int) - 1 ≤ 1 ∧ (1 : Int) ≤ 2 + 1 ∧ (0 : Int) - 1 ≤ 1 ∧ (1 : Int) ≤ 0 + 1 ∧
      ¬ ((1 : Int) < 1) := by
  decide

/-! ## Oscillation bridge -/

/-- Oscillation bridge: if every score error satisfies `|d_t| ≤ x`, then any two differ by at
most `2x`; in particular `max_t d_t − min_t d_t ≤ 2 · max_t |d_t|`
(gain 2, no offset: `score:linf@read → score:osc@read`). -/
theorem osc_le_two_linf (x : Int) (d : List Int) (h : ∀ t ∈ d, -x ≤ t ∧ t ≤ x) :
    ∀ a ∈ d, ∀ b ∈ d, a - b ≤ 2 * x := by
  intro a ha b hb
  have h1 := h a ha
  have h2 := h b hb
  have a2 := h1.2
  have b1 := h2.1
  omega

/-- Counterexample: the factor 2 is needed (`d = [1, -1]`, `x = 1`, oscillation 2). -/
theorem osc_needs_two : ¬ ((1 : Int) - (-1) ≤ 1) := by decide

end Witprobe
