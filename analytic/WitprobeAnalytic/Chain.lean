import WitprobeAnalytic.Sum
import WitprobeAnalytic.Softmax
import WitprobeAnalytic.ExpLn
import WitprobeAnalytic.Metric

/-!
# Typed contracts and chains over the reals (mirror of `coq/Witprobe/Chain.v`)

A stage from metric `m1` to metric `m2` is an affine contract `(a, b)`, `a, b ≥ 0`
(`e_out ≤ a·e_in + b`), or a monotone transfer `f` (`e_out ≤ f e_in`). A chain `chain m1 m2` is
an inductive family indexed by its source and target metric, so a chain whose stages do not line
up does not typecheck (the `#check_failure` lines at the end pin the paper's rejected chains).
Every theorem has the name, hypotheses and conclusion of the Coq lemma of the same name. Coq's
`nonnegreal` (a real with a proof of `0 ≤ ·`, coerced to `R`) is the structure `nonnegreal` here,
whose value is written `nonnegreal.nonneg x` where Coq coerces; Coq's record projections `gain`, `offset`, `tf`, `nonneg` are
`contract.gain`, `contract.offset`, `transfer.tf`, `nonnegreal.nonneg`. Coq's `score_bridge` and
`latent_score_bridge` (stages) are `Chain.score_bridge`, `Chain.latent_score_bridge`, since the
theorems `score_bridge` (InnerBridge) and `latent_score_bridge` (LatentBridge) live in the same
Lean namespace.

Main results: `comp_holds` (affine composition, paper eq. 4), `chain_sound` (whole-chain
soundness: every stage holding and `e 0 ≤ x` give `e n ≤ trace c x`), `trace_app`,
`collapse_trace`, `parallel_sound` with `tv_triangle`, the bridge catalogue, `plain_chain_trace`,
`centred_chain_trace`, `repaired_bound_eq`, `plain_chain_sound`. Counterexamples:
`comp_needs_nonneg_gain`, `transfer_needs_mono`, `parallel_needs_triangle`.

Never compiled (`LEAN_STATUS.md`); no `positivity`, no `field_simp`.
-/

namespace WitprobeAnalytic

open metric

/-! ## Monotonicity helpers -/

theorem tanh_one_minus (x : ℝ) : tanh x = 1 - 2 / (Real.exp (2 * x) + 1) := by
  have hpos : 0 < Real.exp (2 * x) + 1 := by linarith [Real.exp_pos (2 * x)]
  have hne : Real.exp (2 * x) + 1 ≠ 0 := ne_of_gt hpos
  show (Real.exp (2 * x) - 1) / (Real.exp (2 * x) + 1) = 1 - 2 / (Real.exp (2 * x) + 1)
  have e1 : (Real.exp (2 * x) - 1) / (Real.exp (2 * x) + 1) + 2 / (Real.exp (2 * x) + 1) = 1 := by
    rw [div_add_div_same, show Real.exp (2 * x) - 1 + 2 = Real.exp (2 * x) + 1 by ring, div_self hne]
  linarith

/-- `tanh` is nondecreasing. -/
theorem tanh_mono (x y : ℝ) (h : x ≤ y) : tanh x ≤ tanh y := by
  rw [tanh_one_minus x, tanh_one_minus y]
  have h1 : Real.exp (2 * x) ≤ Real.exp (2 * y) := exp_le_mono _ _ (by linarith)
  have hx : 0 < Real.exp (2 * x) + 1 := by linarith [Real.exp_pos (2 * x)]
  have h3 : (Real.exp (2 * y) + 1)⁻¹ ≤ (Real.exp (2 * x) + 1)⁻¹ := by
    first
      | exact inv_le_inv_of_le hx (by linarith)
      | exact inv_anti₀ hx (by linarith)
  rw [div_eq_mul_inv, div_eq_mul_inv]
  linarith

/-! ## Affine contracts -/

/-- Coq's `nonnegreal`: a real and a proof that it is nonnegative. -/
structure nonnegreal where
  mknonnegreal ::
  nonneg : ℝ
  cond_nonneg : 0 ≤ nonneg

/-- A contract `m1 → m2`: `e_out ≤ gain · e_in + offset`, with nonnegative gain and offset. -/
structure contract (m1 m2 : metric) where
  mk_contract ::
  gain : nonnegreal
  offset : nonnegreal

/-- The bound the contract gives for an input bound `x`: `a·x + b`. -/
noncomputable def contract_bound {m1 m2} (c : contract m1 m2) (x : ℝ) : ℝ :=
  nonnegreal.nonneg (contract.gain c) * x + nonnegreal.nonneg (contract.offset c)

/-- The contract holds on the error pair `(e, e')`: `e' ≤ a·e + b`. -/
def contract_holds {m1 m2} (c : contract m1 m2) (e e' : ℝ) : Prop := e' ≤ contract_bound c e

noncomputable def nn_one : nonnegreal := nonnegreal.mknonnegreal 1 zero_le_one

noncomputable def nn_zero : nonnegreal := nonnegreal.mknonnegreal 0 (le_refl 0)

noncomputable def nn_mult (x y : nonnegreal) : nonnegreal :=
  nonnegreal.mknonnegreal (nonnegreal.nonneg x * nonnegreal.nonneg y)
    (mul_nonneg (nonnegreal.cond_nonneg x) (nonnegreal.cond_nonneg y))

noncomputable def nn_plus (x y : nonnegreal) : nonnegreal :=
  nonnegreal.mknonnegreal (nonnegreal.nonneg x + nonnegreal.nonneg y)
    (add_nonneg (nonnegreal.cond_nonneg x) (nonnegreal.cond_nonneg y))

/-- The identity contract `(1, 0)` on one metric. -/
noncomputable def ident (m : metric) : contract m m := contract.mk_contract nn_one nn_zero

/-- Series composition, `g` after `f`: `(a2·a1, a2·b1 + b2)`. The middle metric is shared by type. -/
noncomputable def comp {m1 m2 m3} (g : contract m2 m3) (f : contract m1 m2) : contract m1 m3 :=
  contract.mk_contract (nn_mult (contract.gain g) (contract.gain f))
    (nn_plus (nn_mult (contract.gain g) (contract.offset f)) (contract.offset g))

theorem comp_gain {m1 m2 m3} (g : contract m2 m3) (f : contract m1 m2) :
    (contract.gain (comp g f)).nonneg
      = nonnegreal.nonneg (contract.gain g) * nonnegreal.nonneg (contract.gain f) := rfl

theorem comp_offset {m1 m2 m3} (g : contract m2 m3) (f : contract m1 m2) :
    (contract.offset (comp g f)).nonneg
      = nonnegreal.nonneg (contract.gain g) * nonnegreal.nonneg (contract.offset f)
        + nonnegreal.nonneg (contract.offset g) := rfl

/-- The composite bound is the bound of `g` at the bound of `f`. -/
theorem comp_bound {m1 m2 m3} (g : contract m2 m3) (f : contract m1 m2) (x : ℝ) :
    contract_bound (comp g f) x = contract_bound g (contract_bound f x) := by
  show nonnegreal.nonneg (contract.gain g) * nonnegreal.nonneg (contract.gain f) * x
      + (nonnegreal.nonneg (contract.gain g) * nonnegreal.nonneg (contract.offset f)
        + nonnegreal.nonneg (contract.offset g))
    = nonnegreal.nonneg (contract.gain g)
        * (nonnegreal.nonneg (contract.gain f) * x + nonnegreal.nonneg (contract.offset f))
      + nonnegreal.nonneg (contract.offset g)
  ring

/-- An affine bound with nonnegative gain is nondecreasing. -/
theorem contract_bound_mono {m1 m2} (c : contract m1 m2) (x y : ℝ) (h : x ≤ y) :
    contract_bound c x ≤ contract_bound c y := by
  show nonnegreal.nonneg (contract.gain c) * x + nonnegreal.nonneg (contract.offset c)
    ≤ nonnegreal.nonneg (contract.gain c) * y + nonnegreal.nonneg (contract.offset c)
  have h1 := mul_le_mul_of_nonneg_left h (nonnegreal.cond_nonneg (contract.gain c))
  linarith

/-- Affine composition: `e1 ≤ a1 e0 + b1` and `e2 ≤ a2 e1 + b2` give
`e2 ≤ (a2 a1) e0 + (a2 b1 + b2)`. -/
theorem comp_holds {m1 m2 m3} (g : contract m2 m3) (f : contract m1 m2) (e0 e1 e2 : ℝ)
    (hf : contract_holds f e0 e1) (hg : contract_holds g e1 e2) : contract_holds (comp g f) e0 e2 := by
  show e2 ≤ contract_bound (comp g f) e0
  rw [comp_bound]
  exact le_trans hg (contract_bound_mono g e1 (contract_bound f e0) hf)

/-- Composition is associative (on bounds). -/
theorem comp_assoc_bound {m1 m2 m3 m4} (h : contract m3 m4) (g : contract m2 m3) (f : contract m1 m2)
    (x : ℝ) : contract_bound (comp (comp h g) f) x = contract_bound (comp h (comp g f)) x := by
  simp only [comp_bound]

/-- The identity is neutral on both sides (on bounds). -/
theorem ident_comp_bound {m1 m2} (f : contract m1 m2) (x : ℝ) :
    contract_bound (comp (ident m2) f) x = contract_bound f x := by
  rw [comp_bound]
  show 1 * contract_bound f x + 0 = contract_bound f x
  ring

theorem comp_ident_bound {m1 m2} (f : contract m1 m2) (x : ℝ) :
    contract_bound (comp f (ident m1)) x = contract_bound f x := by
  rw [comp_bound]
  show contract_bound f (1 * x + 0) = contract_bound f x
  rw [one_mul, add_zero]

/-- Counterexample beside `comp_holds`: with a negative gain the composed offset is wrong. -/
theorem comp_needs_nonneg_gain :
    let a1 : ℝ := 1
    let b1 : ℝ := 1
    let a2 : ℝ := -1
    let b2 : ℝ := 1
    let e0 : ℝ := 0
    let e1 : ℝ := 0
    let e2 : ℝ := 1
    e1 ≤ a1 * e0 + b1 ∧ e2 ≤ a2 * e1 + b2 ∧ ¬ (e2 ≤ (a2 * a1) * e0 + (a2 * b1 + b2)) := by
  show (0 : ℝ) ≤ 1 * 0 + 1 ∧ (1 : ℝ) ≤ -1 * 0 + 1 ∧ ¬ ((1 : ℝ) ≤ (-1 * 1) * 0 + (-1 * 1 + 1))
  norm_num

/-! ## Monotone transfers and stages -/

/-- A transfer `m1 → m2`: `e_out ≤ f e_in` with `f` nondecreasing. -/
structure transfer (m1 m2 : metric) where
  mk_transfer ::
  tf : ℝ → ℝ
  tf_mono : ∀ x y, x ≤ y → tf x ≤ tf y

/-- A stage is an affine contract or a monotone transfer, with typed endpoints. -/
inductive stage : metric → metric → Type
  | affine {m1 m2 : metric} : contract m1 m2 → stage m1 m2
  | mono {m1 m2 : metric} : transfer m1 m2 → stage m1 m2

noncomputable def stage_bound {m1 m2 : metric} : stage m1 m2 → ℝ → ℝ
  | .affine c => contract_bound c
  | .mono t => transfer.tf t

/-- The stage holds on the error pair `(e, e')`: `e' ≤ bound e`. -/
def stage_holds {m1 m2} (s : stage m1 m2) (e e' : ℝ) : Prop := e' ≤ stage_bound s e

theorem stage_bound_mono {m1 m2} (s : stage m1 m2) (x y : ℝ) (h : x ≤ y) :
    stage_bound s x ≤ stage_bound s y := by
  cases s with
  | affine c => exact contract_bound_mono c x y h
  | mono t => exact transfer.tf_mono t x y h

/-- An upper bound of the input gives an upper bound of the output. -/
theorem stage_holds_upper {m1 m2} (s : stage m1 m2) (e e' x : ℝ) (H : stage_holds s e e') (hx : e ≤ x) :
    e' ≤ stage_bound s x :=
  le_trans H (stage_bound_mono s e x hx)

/-- The two readings of a stage agree. -/
theorem stage_holds_iff {m1 m2} (s : stage m1 m2) (e e' : ℝ) :
    stage_holds s e e' ↔ (∀ x, e ≤ x → e' ≤ stage_bound s x) :=
  ⟨fun H x hx => stage_holds_upper s e e' x H hx, fun H => H e (le_refl e)⟩

/-- Counterexample beside `stage_holds_upper`: a decreasing `f x = -x`. -/
theorem transfer_needs_mono :
    let f := fun x : ℝ => -x
    0 ≤ f 0 ∧ (0 : ℝ) ≤ 1 ∧ ¬ (0 ≤ f 1) := by
  show (0 : ℝ) ≤ -0 ∧ (0 : ℝ) ≤ 1 ∧ ¬ ((0 : ℝ) ≤ -1)
  norm_num

/-! ## Chains -/

/-- A chain from `m1` to `m3`: stages whose metrics line up, first stage first. -/
inductive chain : metric → metric → Type
  | cnil (m : metric) : chain m m
  | ccons {m1 m2 m3 : metric} : stage m1 m2 → chain m2 m3 → chain m1 m3

/-- The trace value: the chain's upper bound on the end error for an input bound `x`. -/
noncomputable def trace : {m1 m3 : metric} → chain m1 m3 → ℝ → ℝ
  | _, _, .cnil _, x => x
  | _, _, .ccons s rest, x => trace rest (stage_bound s x)

/-- Number of stages; a chain of `n` stages has `n + 1` metric positions. -/
def stages : {m1 m3 : metric} → chain m1 m3 → ℕ
  | _, _, .cnil _ => 0
  | _, _, .ccons _ rest => stages rest + 1

/-- Every stage holds on consecutive errors: `e k` is the error at position `k`. -/
def chain_holds : {m1 m3 : metric} → chain m1 m3 → (ℕ → ℝ) → Prop
  | _, _, .cnil _, _ => True
  | _, _, .ccons s rest, e => stage_holds s (e 0) (e 1) ∧ chain_holds rest (fun k => e (k + 1))

/-- Whole-chain soundness: if every stage holds on the errors `e 0, …, e n` along the chain and
`e 0 ≤ x`, then `e n ≤ trace c x`. -/
theorem chain_sound {m1 m3} (c : chain m1 m3) :
    ∀ (e : ℕ → ℝ) (x : ℝ), chain_holds c e → e 0 ≤ x → e (stages c) ≤ trace c x := by
  induction c with
  | cnil m =>
    intro e x _ hx
    exact hx
  | ccons s rest ih =>
    intro e x H hx
    have H' : stage_holds s (e 0) (e 1) ∧ chain_holds rest (fun k => e (k + 1)) := H
    obtain ⟨hs, hrest⟩ := H'
    exact ih (fun k => e (k + 1)) (stage_bound s x) hrest (stage_holds_upper s (e 0) (e 1) x hs hx)

/-- The trace is nondecreasing in the input bound. -/
theorem trace_mono {m1 m3} (c : chain m1 m3) : ∀ (x y : ℝ), x ≤ y → trace c x ≤ trace c y := by
  induction c with
  | cnil m =>
    intro x y h
    exact h
  | ccons s rest ih =>
    intro x y h
    exact ih _ _ (stage_bound_mono s x y h)

/-- Concatenation of chains that meet at `m2`. -/
def chain_app : {m1 m2 m3 : metric} → chain m1 m2 → chain m2 m3 → chain m1 m3
  | _, _, _, .cnil _, c2 => c2
  | _, _, _, .ccons s rest, c2 => .ccons s (chain_app rest c2)

/-- `trace_app` with the second chain and the input quantified (Lean helper for the induction). -/
theorem trace_app_all {m1 m2 m3} (c1 : chain m1 m2) :
    ∀ (c2 : chain m2 m3) (x : ℝ), trace (chain_app c1 c2) x = trace c2 (trace c1 x) := by
  induction c1 with
  | cnil m =>
    intro c2 x
    rfl
  | ccons s rest ih =>
    intro c2 x
    exact ih c2 (stage_bound s x)

/-- `trace (c1 ++ c2) x = trace c2 (trace c1 x)`. -/
theorem trace_app {m1 m2 m3} (c1 : chain m1 m2) (c2 : chain m2 m3) (x : ℝ) :
    trace (chain_app c1 c2) x = trace c2 (trace c1 x) :=
  trace_app_all c1 c2 x

/-- Prepend a stage to a collapsed tail: `some (tail ∘ f)` for an affine stage, `none` for a transfer. -/
noncomputable def stage_then {m1 m2 m3 : metric} : stage m1 m2 → Option (contract m2 m3) → Option (contract m1 m3)
  | .affine f, some g => some (comp g f)
  | .affine _, none => none
  | .mono _, _ => none

/-- The single affine contract of an all-affine chain (`Chain.compose` in Python). -/
noncomputable def collapse : {m1 m3 : metric} → chain m1 m3 → Option (contract m1 m3)
  | _, _, .cnil m => some (ident m)
  | _, _, .ccons s rest => stage_then s (collapse rest)

/-- An all-affine chain and its collapsed contract give the same bound. -/
theorem collapse_trace {m1 m3} (c : chain m1 m3) :
    ∀ (k : contract m1 m3), collapse c = some k → ∀ (x : ℝ), trace c x = contract_bound k x := by
  induction c with
  | cnil m =>
    intro k hk x
    have hk' : some (ident m) = some k := hk
    have hk'' : ident m = k := Option.some.inj hk'
    rw [← hk'']
    show x = 1 * x + 0
    ring
  | ccons s rest ih =>
    intro k hk x
    cases s with
    | affine f =>
      have h1 : stage_then (stage.affine f) (collapse rest) = some k := hk
      cases hc : collapse rest with
      | none =>
        rw [hc] at h1
        exact absurd h1 (by simp [stage_then])
      | some g =>
        rw [hc] at h1
        have h2 : some (comp g f) = some k := h1
        have h3 : comp g f = k := Option.some.inj h2
        rw [← h3]
        show trace rest (contract_bound f x) = contract_bound (comp g f) x
        rw [comp_bound]
        exact ih g hc (contract_bound f x)
    | mono t =>
      have h1 : stage_then (stage.mono t) (collapse rest) = some k := hk
      exact absurd h1 (by simp [stage_then])

/-! ## Parallel composition -/

/-- Two evaluated chains into the same metric `m` add (`contracts.parallel`). -/
noncomputable def par_bound {a b m} (c1 : chain a m) (c2 : chain b m) (x1 x2 : ℝ) : ℝ :=
  trace c1 x1 + trace c2 x2

/-- Parallel soundness: a triangle inequality in `m` and two sound chains bound the total. -/
theorem parallel_sound {a b m} (c1 : chain a m) (c2 : chain b m) (e1 e2 : ℕ → ℝ) (x1 x2 e : ℝ)
    (H1 : chain_holds c1 e1) (Hx1 : e1 0 ≤ x1) (H2 : chain_holds c2 e2) (Hx2 : e2 0 ≤ x2)
    (He : e ≤ e1 (stages c1) + e2 (stages c2)) : e ≤ par_bound c1 c2 x1 x2 := by
  have h1 := chain_sound c1 e1 x1 H1 Hx1
  have h2 := chain_sound c2 e2 x2 H2 Hx2
  show e ≤ trace c1 x1 + trace c2 x2
  linarith

/-- The triangle inequality of TV; it licenses adding two error terms in `attn_dist:tv@read`. -/
theorem tv_triangle (n : ℕ) (p p' p'' : ℕ → ℝ) : tv n p p'' ≤ tv n p p' + tv n p' p'' := by
  show 2⁻¹ * sum n (fun t => |p t - p'' t|)
    ≤ 2⁻¹ * sum n (fun t => |p t - p' t|) + 2⁻¹ * sum n (fun t => |p' t - p'' t|)
  rw [← mul_add, ← sum_plus]
  refine mul_le_mul_of_nonneg_left ?_ (by norm_num)
  apply sum_le
  intro t _
  show |p t - p'' t| ≤ |p t - p' t| + |p' t - p'' t|
  have e : p t - p'' t = (p t - p' t) + (p' t - p'' t) := by ring
  rw [e]
  exact abs_add _ _

/-- Counterexample beside `parallel_sound`: without the triangle hypothesis nothing follows. -/
theorem parallel_needs_triangle : ¬ ((1 : ℝ) ≤ 0 + 0) := by norm_num

/-! ## The bridge catalogue (`bridges.py`) as typed stages -/

/-- Storage `(1, W)`: entry error at the write to entry error at the read. -/
noncomputable def storage (w : nonnegreal) : contract entryL2Write entryL2Read := contract.mk_contract nn_one w

noncomputable def latent_storage (w : nonnegreal) : contract latentL2Write latentL2Read :=
  contract.mk_contract nn_one w

/-- Score bridge `(q, 0)`, `q = scale · max ‖q‖` (Cauchy–Schwarz). -/
noncomputable def Chain.score_bridge (q : nonnegreal) : contract entryL2Read scoreLinfRead :=
  contract.mk_contract q nn_zero

noncomputable def Chain.latent_score_bridge (q : nonnegreal) : contract latentL2Read scoreLinfRead :=
  contract.mk_contract q nn_zero

/-- Banded score bridge fused with storage `(q, C)`. -/
noncomputable def banded_score_bridge (q c : nonnegreal) : contract entryL2Write scoreLinfRead :=
  contract.mk_contract q c

/-- `osc ≤ 2 · linf`: `(2, 0)`. -/
noncomputable def nn_two : nonnegreal := nonnegreal.mknonnegreal 2 (by norm_num)

noncomputable def osc_bridge : contract scoreLinfRead scoreOscRead := contract.mk_contract nn_two nn_zero

/-- E-form moment, a source stage `(0, x)` at the exact input. -/
noncomputable def eform_moment (x : nonnegreal) : contract entryL2Write scoreEformExcessRead :=
  contract.mk_contract nn_zero x

/-- Selection lemma `(1, b_S)` in selector-score mass. -/
noncomputable def selection (b : nonnegreal) : contract selectorDistTvSelect selectorDistTvSelect :=
  contract.mk_contract nn_one b

/-- The empirical selector-to-attention step `(rho, 0)` (a paired measurement, no theorem). -/
noncomputable def selector_to_attention (rho : nonnegreal) : contract selectorDistTvSelect attnDistTvRead :=
  contract.mk_contract rho nn_zero

/-- `TV ≤ (e^(2x) − 1)/2` from a uniform score error `x`. -/
noncomputable def softmax_tv : transfer scoreLinfRead attnDistTvRead :=
  transfer.mk_transfer (fun x => (Real.exp (2 * x) - 1) / 2) (fun x y h => by
    have h1 : Real.exp (2 * x) ≤ Real.exp (2 * y) := exp_le_mono _ _ (by linarith)
    show (Real.exp (2 * x) - 1) / 2 ≤ (Real.exp (2 * y) - 1) / 2
    linarith)

/-- `TV ≤ tanh(x/4)` from the oscillation `x` of the score error. -/
noncomputable def centred_tv : transfer scoreOscRead attnDistTvRead :=
  transfer.mk_transfer (fun x => tanh (x / 4)) (fun x y h => tanh_mono (x / 4) (y / 4) (by linarith))

/-- `TV ≤ y + y²/2`, `y = max(0, x)`, from the e-form excess `x`. -/
noncomputable def eform_tv : transfer scoreEformExcessRead attnDistTvRead :=
  transfer.mk_transfer (fun x => max 0 x + max 0 x * max 0 x / 2) (fun x y h => by
    show max 0 x + max 0 x * max 0 x / 2 ≤ max 0 y + max 0 y * max 0 y / 2
    have h0 : (0 : ℝ) ≤ max 0 x := le_max_left 0 x
    have h1 : max 0 x ≤ max 0 y := max_le_max (le_refl 0) h
    have h2 : max 0 x * max 0 x ≤ max 0 y * max 0 y := mul_le_mul h1 h1 h0 (le_trans h0 h1)
    linarith)

/-- The plain read chain: storage, score bridge, softmax TV. -/
noncomputable def plain_chain (q w : nonnegreal) : chain entryL2Write attnDistTvRead :=
  .ccons (.affine (storage w)) (.ccons (.affine (Chain.score_bridge q)) (.ccons (.mono softmax_tv) (.cnil _)))

/-- The latent plain chain. -/
noncomputable def latent_plain_chain (q w : nonnegreal) : chain latentL2Write attnDistTvRead :=
  .ccons (.affine (latent_storage w))
    (.ccons (.affine (Chain.latent_score_bridge q)) (.ccons (.mono softmax_tv) (.cnil _)))

/-- The centred chain: banded score bridge, osc bridge, centred TV. -/
noncomputable def centred_chain (q c : nonnegreal) : chain entryL2Write attnDistTvRead :=
  .ccons (.affine (banded_score_bridge q c)) (.ccons (.affine osc_bridge) (.ccons (.mono centred_tv) (.cnil _)))

/-- The e-form chain: moment, e-form TV. -/
noncomputable def eform_chain (x : nonnegreal) : chain entryL2Write attnDistTvRead :=
  .ccons (.affine (eform_moment x)) (.ccons (.mono eform_tv) (.cnil _))

/-- The plain chain at the exact input: `TV ≤ (e^(2qW) − 1)/2` (paper eq. tvbridge). -/
theorem plain_chain_trace (q w : nonnegreal) :
    trace (plain_chain q w) 0 = (Real.exp (2 * (nonnegreal.nonneg q * nonnegreal.nonneg w)) - 1) / 2 := by
  show (Real.exp (2 * (nonnegreal.nonneg q * (1 * 0 + nonnegreal.nonneg w) + 0)) - 1) / 2 = _
  rw [show nonnegreal.nonneg q * (1 * 0 + nonnegreal.nonneg w) + 0
      = nonnegreal.nonneg q * nonnegreal.nonneg w by ring]

/-- The centred chain at the exact input: `TV ≤ tanh((2C)/4) = tanh(C/2)`. -/
theorem centred_chain_trace (q c : nonnegreal) : trace (centred_chain q c) 0 = tanh (nonnegreal.nonneg c / 2) := by
  show tanh ((2 * (nonnegreal.nonneg q * 0 + nonnegreal.nonneg c) + 0) / 4) = _
  rw [show (2 * (nonnegreal.nonneg q * 0 + nonnegreal.nonneg c) + 0) / 4 = nonnegreal.nonneg c / 2 by ring]

/-- The selector term of the repaired chain: selection, then the rho bridge. -/
noncomputable def selector_term (b rho : nonnegreal) : chain selectorDistTvSelect attnDistTvRead :=
  .ccons (.affine (selection b)) (.ccons (.affine (selector_to_attention rho)) (.cnil _))

/-- The repaired C4 bound `TV_L = (e^(2qW) − 1)/2 + rho·b_S` (paper section 3.5). -/
noncomputable def repaired_bound (q w b rho : nonnegreal) : ℝ :=
  par_bound (plain_chain q w) (selector_term b rho) 0 0

theorem repaired_bound_eq (q w b rho : nonnegreal) :
    repaired_bound q w b rho = (Real.exp (2 * (nonnegreal.nonneg q * nonnegreal.nonneg w)) - 1) / 2 + nonnegreal.nonneg rho * nonnegreal.nonneg b := by
  show trace (plain_chain q w) 0 + trace (selector_term b rho) 0 = _
  rw [plain_chain_trace q w]
  show (Real.exp (2 * (nonnegreal.nonneg q * nonnegreal.nonneg w)) - 1) / 2
      + (nonnegreal.nonneg rho * (1 * 0 + nonnegreal.nonneg b) + 0) = _
  ring

/-- The selector term collapses to the single contract `(rho, rho·b_S)`. -/
theorem selector_term_collapse (b rho : nonnegreal) (x : ℝ) :
    trace (selector_term b rho) x = nonnegreal.nonneg rho * x + nonnegreal.nonneg rho * nonnegreal.nonneg b := by
  show nonnegreal.nonneg rho * (1 * x + nonnegreal.nonneg b) + 0 = _
  ring

/-- `chain_sound` on the plain chain: the served TV satisfies `e 3 ≤ (e^(2qW) − 1)/2`. -/
theorem plain_chain_sound (q w : nonnegreal) (e : ℕ → ℝ) (H0 : e 0 = 0) (H : chain_holds (plain_chain q w) e) :
    e 3 ≤ (Real.exp (2 * (nonnegreal.nonneg q * nonnegreal.nonneg w)) - 1) / 2 := by
  rw [← plain_chain_trace q w]
  exact chain_sound (plain_chain q w) e 0 H (le_of_eq H0)

end WitprobeAnalytic

/-! Rejected chains (paper section 3.4): each must fail to typecheck, as Coq's `Fail` checks
(`#check_failure` is an error if the term elaborates). -/

-- the selection stage directly after the storage stage
open WitprobeAnalytic in
#check_failure (fun (w b : nonnegreal) =>
  (chain.ccons (stage.affine (storage w)) (chain.ccons (stage.affine (selection b)) (chain.cnil _)) :
    chain metric.entryL2Write metric.selectorDistTvSelect))

-- the bare affine composition
open WitprobeAnalytic in
#check_failure (fun (w b : nonnegreal) => comp (selection b) (storage w))

-- a latent storage bound fed to the dense score bridge
open WitprobeAnalytic in
#check_failure (fun (q w : nonnegreal) =>
  (chain.ccons (stage.affine (latent_storage w)) (chain.ccons (stage.affine (Chain.score_bridge q))
    (chain.cnil _)) : chain metric.latentL2Write metric.scoreLinfRead))
