import WitprobeAnalytic.Sum
import WitprobeAnalytic.ExpLn
import WitprobeAnalytic.SoftmaxTV

/-!
# Ville's inequality on a finite sample space, at every finite horizon
(mirror of `coq/Witprobe/Ville.v`)

One step draws an outcome `x` in `{0..K-1}` with probability `p x`; the draws are i.i.d. A
history is the list of past outcomes, newest first, and a process `M` assigns a real to every
history. Coq's `skipn`, `tl`, `length` and `Rmax` are `List.drop`, `List.tail`, `List.length`
and `max`; Coq's `S n` is `n + 1`, `/ delta` is `delta⁻¹`, `ln` is `Real.log`. Every theorem has
the name, hypotheses and conclusion of the Coq lemma of the same name.

* `expect K p T h f`: the expectation of `f` over the `K^T` paths of `T` more draws.
* `runmax M T h'`: `max_{k ≤ T} M (drop k h')`; `hit K p M c T h`: the stopped recursion.

Main results: `hit_expect` (the stopped recursion is the path probability), `ville_hit`,
`ville` (`P(max_{k≤T} M_k ≥ 1/δ) ≤ δ·M_0` for every horizon `T`), `eprocess_ville`,
`eprocess_log_alarm` (the ledger's alarm), `eprocess_log_factor` (and `_half`).
Pending (listed in `tests/data/kernel_inventory.json`): `eprocess_threshold_001` (an
interval-decided number) and the counterexample `eprocess_needs_mean_le_one`.

Never compiled (`LEAN_STATUS.md`): no `positivity` on differences, no `field_simp`; the one
cancellation (`√C · (√C)⁻¹ = 1`) is `mul_inv_cancel₀` fed to `linear_combination`.
-/

namespace WitprobeAnalytic

/-- `E[f(path)]` over `T` more i.i.d. draws from `p` on `{0..K-1}`, starting at history `h`. -/
noncomputable def expect (K : ℕ) (p : ℕ → ℝ) : ℕ → List ℕ → (List ℕ → ℝ) → ℝ
  | 0, h, f => f h
  | T + 1, h, f => sum K (fun x => p x * expect K p T (x :: h) f)

/-- Only the values of `f` on paths `l ++ h` with `|l| = T` matter. -/
theorem expect_ext (K : ℕ) (p : ℕ → ℝ) (T : ℕ) :
    ∀ (h : List ℕ) (f g : List ℕ → ℝ), (∀ (l : List ℕ), List.length l = T → f (l ++ h) = g (l ++ h)) →
      expect K p T h f = expect K p T h g := by
  induction T with
  | zero =>
    intro h f g H
    show f h = g h
    exact H [] rfl
  | succ T IH =>
    intro h f g H
    show sum K (fun x => p x * expect K p T (x :: h) f) = sum K (fun x => p x * expect K p T (x :: h) g)
    apply sum_ext
    intro x _
    have e : expect K p T (x :: h) f = expect K p T (x :: h) g := by
      apply IH
      intro l hl
      have happ : l ++ x :: h = (l ++ [x]) ++ h := (List.append_assoc l [x] h).symm
      rw [happ]
      apply H
      simp [hl]
    show p x * expect K p T (x :: h) f = p x * expect K p T (x :: h) g
    rw [e]

/-- The expectation of a constant is that constant when `sum p = 1`. -/
theorem expect_const (K : ℕ) (p : ℕ → ℝ) (a : ℝ) (hp : sum K p = 1) :
    ∀ (T : ℕ) (h : List ℕ), expect K p T h (fun _ => a) = a := by
  intro T
  induction T with
  | zero => intro h; rfl
  | succ T IH =>
    intro h
    show sum K (fun x => p x * expect K p T (x :: h) (fun _ => a)) = a
    have e : sum K (fun x => p x * expect K p T (x :: h) (fun _ => a)) = sum K (fun x => p x * a) :=
      sum_ext K _ _ (fun x _ => by
        show p x * expect K p T (x :: h) (fun _ => a) = p x * a
        rw [IH (x :: h)])
    rw [e, sum_scal_r, hp, one_mul]

/-- The running maximum `max_{k ≤ T} M (drop k h')`. -/
noncomputable def runmax (M : List ℕ → ℝ) : ℕ → List ℕ → ℝ
  | 0, h' => M h'
  | T + 1, h' => max (M h') (runmax M T (List.tail h'))

theorem skipn_S_tl {A : Type} (n : ℕ) (l : List A) : List.drop (n + 1) l = List.drop n (List.tail l) := by
  cases l with
  | nil => cases n <;> rfl
  | cons a l => rfl

theorem skipn_app_length {A : Type} (l h : List A) : List.drop (List.length l) (l ++ h) = h := by
  induction l with
  | nil => rfl
  | cons a l ih => exact ih

/-- Peeling the oldest history off the running maximum. -/
theorem runmax_S_last (M : List ℕ → ℝ) (T : ℕ) :
    ∀ (h' : List ℕ), runmax M (T + 1) h' = max (runmax M T h') (M (List.drop (T + 1) h')) := by
  induction T with
  | zero =>
    intro h'
    cases h' <;> rfl
  | succ T IH =>
    intro h'
    have e1 : runmax M (T + 1 + 1) h' = max (M h') (runmax M (T + 1) (List.tail h')) := rfl
    have e2 : runmax M (T + 1) h' = max (M h') (runmax M T (List.tail h')) := rfl
    rw [e1, IH (List.tail h'), e2, max_assoc, skipn_S_tl (T + 1) h']

/-- The indicator of `c ≤ y`. -/
noncomputable def above (c y : ℝ) : ℝ := if c ≤ y then 1 else 0

/-- `P(max_{k≤T} M_k ≥ c | h)`: the probability that the process reaches `c` within `T` more draws. -/
noncomputable def cross_prob (K : ℕ) (p : ℕ → ℝ) (M : List ℕ → ℝ) (c : ℝ) (T : ℕ) (h : List ℕ) : ℝ :=
  expect K p T h (fun h' => above c (runmax M T h'))

/-- Probability of crossing `c` within `T` more steps: 1 once crossed, otherwise one more draw. -/
noncomputable def hit (K : ℕ) (p : ℕ → ℝ) (M : List ℕ → ℝ) (c : ℝ) : ℕ → List ℕ → ℝ
  | 0, h => if c ≤ M h then 1 else 0
  | T + 1, h => if c ≤ M h then 1 else sum K (fun x => p x * hit K p M c T (x :: h))

/-- Below `c` at the oldest history, the running maximum crosses iff the rest does. -/
theorem above_Rmax_below (c a b : ℝ) (hb : b < c) : above c (max a b) = above c a := by
  show (if c ≤ max a b then (1 : ℝ) else 0) = (if c ≤ a then (1 : ℝ) else 0)
  rcases le_total a b with h | h
  · rw [max_eq_right h]
    have h1 : ¬ (c ≤ b) := not_le.mpr hb
    have h2 : ¬ (c ≤ a) := fun hca => h1 (le_trans hca h)
    rw [if_neg h1, if_neg h2]
  · rw [max_eq_left h]

theorem above_Rmax_crossed (c a b : ℝ) (hb : c ≤ b) : above c (max a b) = 1 := by
  show (if c ≤ max a b then (1 : ℝ) else 0) = 1
  rw [if_pos (le_trans hb (le_max_right a b))]

/-- The stopped recursion computes the path probability when `sum p = 1`. -/
theorem hit_expect (K : ℕ) (p : ℕ → ℝ) (M : List ℕ → ℝ) (c : ℝ) (hp : sum K p = 1) :
    ∀ (T : ℕ) (h : List ℕ), hit K p M c T h = cross_prob K p M c T h := by
  intro T
  induction T with
  | zero => intro h; rfl
  | succ T IH =>
    intro h
    show hit K p M c (T + 1) h = expect K p (T + 1) h (fun h' => above c (runmax M (T + 1) h'))
    by_cases hc : c ≤ M h
    · have e1 : hit K p M c (T + 1) h = 1 := by
        show (if c ≤ M h then (1 : ℝ) else sum K (fun x => p x * hit K p M c T (x :: h))) = 1
        rw [if_pos hc]
      have e2 : expect K p (T + 1) h (fun h' => above c (runmax M (T + 1) h'))
          = expect K p (T + 1) h (fun _ => 1) := by
        apply expect_ext
        intro l hl
        show above c (runmax M (T + 1) (l ++ h)) = 1
        rw [runmax_S_last M T (l ++ h), ← hl, skipn_app_length]
        exact above_Rmax_crossed c _ _ hc
      rw [e1, e2, expect_const K p 1 hp (T + 1) h]
    · have e1 : hit K p M c (T + 1) h = sum K (fun x => p x * hit K p M c T (x :: h)) := by
        show (if c ≤ M h then (1 : ℝ) else sum K (fun x => p x * hit K p M c T (x :: h))) = _
        rw [if_neg hc]
      rw [e1]
      show sum K (fun x => p x * hit K p M c T (x :: h))
        = sum K (fun x => p x * expect K p T (x :: h) (fun h' => above c (runmax M (T + 1) h')))
      apply sum_ext
      intro x _
      have e4 : expect K p T (x :: h) (fun h' => above c (runmax M T h'))
          = expect K p T (x :: h) (fun h' => above c (runmax M (T + 1) h')) := by
        apply expect_ext
        intro l hl
        show above c (runmax M T (l ++ x :: h)) = above c (runmax M (T + 1) (l ++ x :: h))
        have happ : l ++ x :: h = (l ++ [x]) ++ h := (List.append_assoc l [x] h).symm
        have hlen : T + 1 = List.length (l ++ [x]) := by simp [hl]
        have hd : List.drop (T + 1) (l ++ x :: h) = h := by
          rw [happ, hlen, skipn_app_length]
        rw [runmax_S_last M T (l ++ x :: h), hd]
        exact (above_Rmax_below c _ _ (not_le.mp hc)).symm
      show p x * hit K p M c T (x :: h)
        = p x * expect K p T (x :: h) (fun h' => above c (runmax M (T + 1) h'))
      rw [IH (x :: h)]
      show p x * expect K p T (x :: h) (fun h' => above c (runmax M T h'))
        = p x * expect K p T (x :: h) (fun h' => above c (runmax M (T + 1) h'))
      rw [e4]

theorem one_le_div (a c : ℝ) (hc : 0 < c) (ha : c ≤ a) : 1 ≤ a / c :=
  le_div_of_mul_le_pos hc (by rw [one_mul]; exact ha)

/-- Ville's inequality, stopped form: for `p ≥ 0`, a nonnegative supermartingale and `c > 0`,
`hit T h ≤ M h / c`. -/
theorem ville_hit (K : ℕ) (p : ℕ → ℝ) (M : List ℕ → ℝ) (c : ℝ) (hp : ∀ x, x < K → 0 ≤ p x)
    (hM : ∀ h, 0 ≤ M h) (hsup : ∀ h, sum K (fun x => p x * M (x :: h)) ≤ M h) (hc : 0 < c) :
    ∀ (T : ℕ) (h : List ℕ), hit K p M c T h ≤ M h / c := by
  intro T
  induction T with
  | zero =>
    intro h
    show (if c ≤ M h then (1 : ℝ) else 0) ≤ M h / c
    by_cases hx : c ≤ M h
    · rw [if_pos hx]
      exact WitprobeAnalytic.one_le_div (M h) c hc hx
    · rw [if_neg hx]
      exact div_nonneg (hM h) hc.le
  | succ T IH =>
    intro h
    show (if c ≤ M h then (1 : ℝ) else sum K (fun x => p x * hit K p M c T (x :: h))) ≤ M h / c
    by_cases hx : c ≤ M h
    · rw [if_pos hx]
      exact WitprobeAnalytic.one_le_div (M h) c hc hx
    · rw [if_neg hx]
      have h1 : sum K (fun x => p x * hit K p M c T (x :: h)) ≤ sum K (fun x => p x * M (x :: h) / c) :=
        sum_le K (fun x => p x * hit K p M c T (x :: h)) (fun x => p x * M (x :: h) / c) (fun x hxk => by
          show p x * hit K p M c T (x :: h) ≤ p x * M (x :: h) / c
          rw [mul_div_assoc]
          exact mul_le_mul_of_nonneg_left (IH (x :: h)) (hp x hxk))
      have h2 : sum K (fun x => p x * M (x :: h) / c) = sum K (fun x => p x * M (x :: h)) / c :=
        sum_div_r K c (fun x => p x * M (x :: h))
      have h3 : sum K (fun x => p x * M (x :: h)) / c ≤ M h / c := by
        rw [div_eq_mul_inv, div_eq_mul_inv]
        exact mul_le_mul_of_nonneg_right (hsup h) (inv_nonneg.mpr hc.le)
      calc sum K (fun x => p x * hit K p M c T (x :: h))
          ≤ sum K (fun x => p x * M (x :: h) / c) := h1
        _ = sum K (fun x => p x * M (x :: h)) / c := h2
        _ ≤ M h / c := h3

/-- Ville's inequality on paths: `P(max_{k≤T} M_k ≥ 1/δ) ≤ δ·M_0` for every horizon `T`. -/
theorem ville (K : ℕ) (p : ℕ → ℝ) (M : List ℕ → ℝ) (delta : ℝ) (hp : ∀ x, x < K → 0 ≤ p x)
    (hp1 : sum K p = 1) (hM : ∀ h, 0 ≤ M h) (hsup : ∀ h, sum K (fun x => p x * M (x :: h)) ≤ M h)
    (hd : 0 < delta) : ∀ (T : ℕ), cross_prob K p M delta⁻¹ T [] ≤ delta * M [] := by
  intro T
  rw [← hit_expect K p M delta⁻¹ hp1 T []]
  have h := ville_hit K p M delta⁻¹ hp hM hsup (inv_pos.mpr hd) T []
  have e : M [] / delta⁻¹ = delta * M [] := by rw [div_inv_eq_mul, mul_comm]
  rw [e] at h
  exact h

/-- The product process: `M [] = 1`, `M (x :: h) = M h * g h x`. -/
noncomputable def prod_process (g : List ℕ → ℕ → ℝ) : List ℕ → ℝ
  | [] => 1
  | x :: h => prod_process g h * g h x

theorem prod_process_nonneg (g : List ℕ → ℕ → ℝ) (hg : ∀ h x, 0 ≤ g h x) :
    ∀ (h : List ℕ), 0 ≤ prod_process g h := by
  intro h
  induction h with
  | nil =>
    show (0 : ℝ) ≤ 1
    exact zero_le_one
  | cons x h ih =>
    show 0 ≤ prod_process g h * g h x
    exact mul_nonneg ih (hg h x)

/-- Factors with conditional mean at most 1 make the product a supermartingale. -/
theorem prod_process_supermartingale (K : ℕ) (p : ℕ → ℝ) (g : List ℕ → ℕ → ℝ) (hg : ∀ h x, 0 ≤ g h x)
    (hmean : ∀ h, sum K (fun x => p x * g h x) ≤ 1) :
    ∀ (h : List ℕ), sum K (fun x => p x * prod_process g (x :: h)) ≤ prod_process g h := by
  intro h
  have e : sum K (fun x => p x * prod_process g (x :: h))
      = sum K (fun x => prod_process g h * (p x * g h x)) :=
    sum_ext K _ _ (fun x _ => by
      show p x * (prod_process g h * g h x) = prod_process g h * (p x * g h x)
      ring)
  rw [e, sum_scal_l]
  have h0 := prod_process_nonneg g hg h
  calc prod_process g h * sum K (fun x => p x * g h x) ≤ prod_process g h * 1 :=
        mul_le_mul_of_nonneg_left (hmean h) h0
    _ = prod_process g h := mul_one _

/-- The e-process corollary: factors `g ≥ 0` with conditional mean `≤ 1`, started at 1, cross
`1/δ` within `T` steps with probability `≤ δ`, for every `T`. -/
theorem eprocess_ville (K : ℕ) (p : ℕ → ℝ) (g : List ℕ → ℕ → ℝ) (delta : ℝ) (hp : ∀ x, x < K → 0 ≤ p x)
    (hp1 : sum K p = 1) (hg : ∀ h x, 0 ≤ g h x) (hmean : ∀ h, sum K (fun x => p x * g h x) ≤ 1)
    (hd : 0 < delta) : ∀ (T : ℕ), cross_prob K p (prod_process g) delta⁻¹ T [] ≤ delta := by
  intro T
  have h := ville K p (prod_process g) delta hp hp1 (prod_process_nonneg g hg)
    (prod_process_supermartingale K p g hg hmean) hd T
  have e : delta * prod_process g [] = delta := by
    show delta * 1 = delta
    exact mul_one delta
  rw [e] at h
  exact h

/-- The log process of the ledger: `log M [] = 0`, `log M (x :: h) = log M h + lg h x`. -/
noncomputable def log_process (lg : List ℕ → ℕ → ℝ) : List ℕ → ℝ
  | [] => 0
  | x :: h => log_process lg h + lg h x

theorem exp_log_process (lg : List ℕ → ℕ → ℝ) (h : List ℕ) :
    Real.exp (log_process lg h) = prod_process (fun h x => Real.exp (lg h x)) h := by
  induction h with
  | nil =>
    show Real.exp 0 = 1
    exact Real.exp_zero
  | cons x h ih =>
    show Real.exp (log_process lg h + lg h x)
      = prod_process (fun h x => Real.exp (lg h x)) h * Real.exp (lg h x)
    rw [Real.exp_add, ih]

theorem runmax_ext (M1 M2 : List ℕ → ℝ) (T : ℕ) (H : ∀ h, M1 h = M2 h) :
    ∀ (h' : List ℕ), runmax M1 T h' = runmax M2 T h' := by
  induction T with
  | zero =>
    intro h'
    exact H h'
  | succ T IH =>
    intro h'
    show max (M1 h') (runmax M1 T (List.tail h')) = max (M2 h') (runmax M2 T (List.tail h'))
    rw [H h', IH (List.tail h')]

theorem runmax_exp (L : List ℕ → ℝ) (T : ℕ) :
    ∀ (h' : List ℕ), runmax (fun h => Real.exp (L h)) T h' = Real.exp (runmax L T h') := by
  induction T with
  | zero =>
    intro h'
    rfl
  | succ T IH =>
    intro h'
    show max (Real.exp (L h')) (runmax (fun h => Real.exp (L h)) T (List.tail h'))
      = Real.exp (max (L h') (runmax L T (List.tail h')))
    rw [IH (List.tail h'), exp_Rmax]

/-- `1/δ ≤ e^r` iff `log(1/δ) ≤ r`. -/
theorem above_exp (delta r : ℝ) (hd : 0 < delta) :
    above delta⁻¹ (Real.exp r) = above (Real.log delta⁻¹) r := by
  have hiff : delta⁻¹ ≤ Real.exp r ↔ Real.log delta⁻¹ ≤ r := by
    rw [exp_le_iff (Real.log delta⁻¹) r, Real.exp_log (inv_pos.mpr hd)]
  show (if delta⁻¹ ≤ Real.exp r then (1 : ℝ) else 0) = (if Real.log delta⁻¹ ≤ r then (1 : ℝ) else 0)
  by_cases h1 : delta⁻¹ ≤ Real.exp r
  · rw [if_pos h1, if_pos (hiff.mp h1)]
  · rw [if_neg h1, if_neg (fun h2 => h1 (hiff.mpr h2))]

/-- The ledger's alarm: log-factors `lg` with `E[exp(lg) | past] ≤ 1`; the alarm
`max_{t≤T} log M_t ≥ log(1/δ)` fires with probability at most `δ`, for every `T`. -/
theorem eprocess_log_alarm (K : ℕ) (p : ℕ → ℝ) (lg : List ℕ → ℕ → ℝ) (delta : ℝ)
    (hp : ∀ x, x < K → 0 ≤ p x) (hp1 : sum K p = 1)
    (hmean : ∀ h, sum K (fun x => p x * Real.exp (lg h x)) ≤ 1) (hd : 0 < delta) :
    ∀ (T : ℕ), cross_prob K p (log_process lg) (Real.log delta⁻¹) T [] ≤ delta := by
  intro T
  have E : cross_prob K p (log_process lg) (Real.log delta⁻¹) T []
      = cross_prob K p (prod_process (fun h x => Real.exp (lg h x))) delta⁻¹ T [] := by
    show expect K p T [] (fun h' => above (Real.log delta⁻¹) (runmax (log_process lg) T h'))
      = expect K p T [] (fun h' => above delta⁻¹ (runmax (prod_process (fun h x => Real.exp (lg h x))) T h'))
    apply expect_ext
    intro l _
    show above (Real.log delta⁻¹) (runmax (log_process lg) T (l ++ []))
      = above delta⁻¹ (runmax (prod_process (fun h x => Real.exp (lg h x))) T (l ++ []))
    rw [runmax_ext (prod_process (fun h x => Real.exp (lg h x))) (fun h => Real.exp (log_process lg h)) T
        (fun h => (exp_log_process lg h).symm) (l ++ []),
      runmax_exp (log_process lg) T (l ++ []), above_exp delta _ hd]
  rw [E]
  exact eprocess_ville K p (fun h x => Real.exp (lg h x)) delta hp hp1
    (fun h x => (Real.exp_pos (lg h x)).le) hmean hd T

/-- The factor of `eprocess.py`: with `λ = 4κ/√C` and `z = (W − m)/√C`,
`λ(W − m) − λ²C/8 = 4κz − 2κ²` for `C > 0`. -/
theorem eprocess_log_factor (kappa W m C : ℝ) (hC : 0 < C) :
    let lambda := 4 * kappa / Real.sqrt C
    lambda * (W - m) - lambda ^ 2 * C / 8 = 4 * kappa * ((W - m) / Real.sqrt C) - 2 * kappa ^ 2 := by
  show 4 * kappa / Real.sqrt C * (W - m) - (4 * kappa / Real.sqrt C) ^ 2 * C / 8
      = 4 * kappa * ((W - m) / Real.sqrt C) - 2 * kappa ^ 2
  have hs : 0 < Real.sqrt C := Real.sqrt_pos.mpr hC
  have hs2 : Real.sqrt C ^ 2 = C := Real.sq_sqrt hC.le
  have hinv : Real.sqrt C * (Real.sqrt C)⁻¹ = 1 := mul_inv_cancel₀ (ne_of_gt hs)
  linear_combination (-2 * kappa ^ 2 * (Real.sqrt C * (Real.sqrt C)⁻¹ + 1)) * hinv
    + (2 * kappa ^ 2 * ((Real.sqrt C)⁻¹) ^ 2) * hs2

/-- At `κ = 1/2` the log-factor is `2z − 1/2`. -/
theorem eprocess_log_factor_half (W m C : ℝ) (hC : 0 < C) :
    let lambda := 4 * (1 / 2) / Real.sqrt C
    lambda * (W - m) - lambda ^ 2 * C / 8 = 2 * ((W - m) / Real.sqrt C) - 1 / 2 := by
  have H : 4 * (1 / 2) / Real.sqrt C * (W - m) - (4 * (1 / 2) / Real.sqrt C) ^ 2 * C / 8
      = 4 * (1 / 2) * ((W - m) / Real.sqrt C) - 2 * (1 / 2) ^ 2 := eprocess_log_factor (1 / 2) W m C hC
  show 4 * (1 / 2) / Real.sqrt C * (W - m) - (4 * (1 / 2) / Real.sqrt C) ^ 2 * C / 8
      = 2 * ((W - m) / Real.sqrt C) - 1 / 2
  rw [H]
  ring

end WitprobeAnalytic
