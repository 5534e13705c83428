(** * Typed contracts and chains over the reals

    A stage from metric [m1] to metric [m2] is an affine contract [(a, b)], [a, b >= 0]
    ([e_out <= a * e_in + b]), or a monotone transfer [f] ([e_out <= f e_in]). A chain
    [chain m1 m2] is an inductive family indexed by its source and target metric, so a chain
    whose stages do not line up does not typecheck (the [Fail] checks below pin the paper's
    rejected chain). Mirrors [python/witprobe/calculus/contracts.py] and [Witprobe/Chain.lean].

    Main results:
    - [comp_holds]: the composite [comp g f] of affine contracts, with gain [a2 * a1] and
      offset [a2 * b1 + b2], holds whenever [f] and [g] hold (paper eq. 4);
      [comp_bound], [comp_assoc_bound], [ident_comp_bound], [comp_ident_bound].
      Counterexample: [comp_needs_nonneg_gain].
    - [stage_holds_upper]: if a stage holds on [(e, e')] and [e <= x], then [e' <= bound x].
      Counterexample: [transfer_needs_mono].
    - [chain_sound]: given one error per metric position along a chain, each stage holding,
      and [e 0 <= x], the end error is at most [trace c x]. [trace_app], [trace_mono].
    - [collapse_trace]: an all-affine chain collapses to one affine contract with the same bound.
    - [parallel_sound]: two chains into the same metric add ([contracts.parallel]);
      [tv_triangle] is the triangle inequality that licenses the sum for [attn_dist:tv@read].
    - The bridge catalogue of [bridges.py] as typed stages; [plain_chain], [centred_chain],
      [eform_chain] typecheck; [repaired_bound_eq]: the repaired C4 bound is
      [(e^(2 q W) - 1)/2 + rho * b_S] (paper section 3.5).
    - [Fail] checks: selection after storage (the rejected chain), selection attached to the
      attention chain, the selector term added to an attention TV without the rho bridge, a
      latent storage bound fed to the dense score bridge, a score error fed to the centred
      transfer. *)

From Coq Require Import Reals Lra.
From Witprobe Require Import Sum Softmax ExpLn Metric.
Open Scope R_scope.

(** ** Monotonicity helpers *)

Lemma tanh_one_minus (x : R) : tanh x = 1 - 2 / (exp (2 * x) + 1).
Proof.
  unfold tanh. assert (0 < exp (2 * x)) by apply exp_pos. field. lra.
Qed.

(** [tanh] is nondecreasing. *)
Lemma tanh_mono (x y : R) : x <= y -> tanh x <= tanh y.
Proof.
  intros H. rewrite !tanh_one_minus.
  assert (0 < exp (2 * x)) by apply exp_pos.
  assert (exp (2 * x) <= exp (2 * y)) by (apply exp_le_mono; lra).
  assert (/ (exp (2 * y) + 1) <= / (exp (2 * x) + 1)) by (apply Rinv_le_contravar; lra).
  unfold Rdiv. lra.
Qed.

(** ** Affine contracts *)

(** A contract [m1 -> m2]: [e_out <= gain * e_in + offset], with nonnegative gain and offset. *)
Record contract (m1 m2 : metric) : Set := mk_contract {
  gain : nonnegreal;
  offset : nonnegreal }.
Arguments mk_contract {m1 m2}.
Arguments gain {m1 m2}.
Arguments offset {m1 m2}.

(** The bound the contract gives for an input bound [x]: [a * x + b]. *)
Definition contract_bound {m1 m2} (c : contract m1 m2) (x : R) : R := gain c * x + offset c.

(** The contract holds on the error pair [(e, e')]: [e' <= a * e + b]. *)
Definition contract_holds {m1 m2} (c : contract m1 m2) (e e' : R) : Prop := e' <= contract_bound c e.

Definition nn_one : nonnegreal := mknonnegreal 1 Rle_0_1.
Definition nn_zero : nonnegreal := mknonnegreal 0 (Rle_refl 0).
Definition nn_mult (x y : nonnegreal) : nonnegreal :=
  mknonnegreal (x * y) (Rmult_le_pos _ _ (cond_nonneg x) (cond_nonneg y)).
Definition nn_plus (x y : nonnegreal) : nonnegreal :=
  mknonnegreal (x + y) (Rplus_le_le_0_compat _ _ (cond_nonneg x) (cond_nonneg y)).

(** The identity contract [(1, 0)] on one metric. *)
Definition ident (m : metric) : contract m m := mk_contract nn_one nn_zero.

(** Series composition, [g] after [f]: [(a2 * a1, a2 * b1 + b2)]. The middle metric is shared
    by type. *)
Definition comp {m1 m2 m3} (g : contract m2 m3) (f : contract m1 m2) : contract m1 m3 :=
  mk_contract (nn_mult (gain g) (gain f)) (nn_plus (nn_mult (gain g) (offset f)) (offset g)).

Lemma comp_gain {m1 m2 m3} (g : contract m2 m3) (f : contract m1 m2) :
  nonneg (gain (comp g f)) = gain g * gain f.
Proof. reflexivity. Qed.

Lemma comp_offset {m1 m2 m3} (g : contract m2 m3) (f : contract m1 m2) :
  nonneg (offset (comp g f)) = gain g * offset f + offset g.
Proof. reflexivity. Qed.

(** The composite bound is the bound of [g] at the bound of [f]. *)
Lemma comp_bound {m1 m2 m3} (g : contract m2 m3) (f : contract m1 m2) (x : R) :
  contract_bound (comp g f) x = contract_bound g (contract_bound f x).
Proof. unfold contract_bound, comp; simpl. ring. Qed.

(** An affine bound with nonnegative gain is nondecreasing. *)
Lemma contract_bound_mono {m1 m2} (c : contract m1 m2) (x y : R) :
  x <= y -> contract_bound c x <= contract_bound c y.
Proof.
  intros H. unfold contract_bound.
  pose proof (cond_nonneg (gain c)). apply Rplus_le_compat_r, Rmult_le_compat_l; assumption.
Qed.

(** Affine composition: if [e1 <= a1 e0 + b1] and [e2 <= a2 e1 + b2] then
    [e2 <= (a2 a1) e0 + (a2 b1 + b2)]. *)
Theorem comp_holds {m1 m2 m3} (g : contract m2 m3) (f : contract m1 m2) (e0 e1 e2 : R) :
  contract_holds f e0 e1 -> contract_holds g e1 e2 -> contract_holds (comp g f) e0 e2.
Proof.
  unfold contract_holds. intros Hf Hg. rewrite comp_bound.
  eapply Rle_trans; [exact Hg | apply contract_bound_mono, Hf].
Qed.

(** Composition is associative (on bounds). *)
Lemma comp_assoc_bound {m1 m2 m3 m4} (h : contract m3 m4) (g : contract m2 m3)
    (f : contract m1 m2) (x : R) :
  contract_bound (comp (comp h g) f) x = contract_bound (comp h (comp g f)) x.
Proof. rewrite !comp_bound. reflexivity. Qed.

(** The identity is neutral on both sides (on bounds). *)
Lemma ident_comp_bound {m1 m2} (f : contract m1 m2) (x : R) :
  contract_bound (comp (ident m2) f) x = contract_bound f x.
Proof. rewrite comp_bound. unfold contract_bound at 1; simpl. ring. Qed.

Lemma comp_ident_bound {m1 m2} (f : contract m1 m2) (x : R) :
  contract_bound (comp f (ident m1)) x = contract_bound f x.
Proof. rewrite comp_bound. unfold contract_bound at 2; simpl. f_equal. ring. Qed.

(** Counterexample beside [comp_holds]: with a negative gain the composed offset is wrong.
    [f = (1, 1)], [g = (-1, 1)], errors [0, 0, 1]: both stages hold
    ([0 <= 1*0 + 1], [1 <= -1*0 + 1]) but [1 > (-1*1)*0 + (-1*1 + 1) = 0]. *)
Lemma comp_needs_nonneg_gain :
  let a1 := 1 in let b1 := 1 in let a2 := -1 in let b2 := 1 in
  let e0 := 0 in let e1 := 0 in let e2 := 1 in
  e1 <= a1 * e0 + b1 /\ e2 <= a2 * e1 + b2 /\ ~ (e2 <= (a2 * a1) * e0 + (a2 * b1 + b2)).
Proof. simpl. lra. Qed.

(** ** Monotone transfers and stages *)

(** A transfer [m1 -> m2]: [e_out <= f e_in] with [f] nondecreasing. *)
Record transfer (m1 m2 : metric) : Type := mk_transfer {
  tf : R -> R;
  tf_mono : forall x y, x <= y -> tf x <= tf y }.
Arguments mk_transfer {m1 m2}.
Arguments tf {m1 m2}.
Arguments tf_mono {m1 m2}.

(** A stage is an affine contract or a monotone transfer, with typed endpoints. *)
Inductive stage : metric -> metric -> Type :=
  | affine {m1 m2} : contract m1 m2 -> stage m1 m2
  | mono {m1 m2} : transfer m1 m2 -> stage m1 m2.

Definition stage_bound {m1 m2} (s : stage m1 m2) : R -> R :=
  match s with
  | affine c => contract_bound c
  | mono t => tf t
  end.

(** The stage holds on the error pair [(e, e')]: [e' <= bound e]. *)
Definition stage_holds {m1 m2} (s : stage m1 m2) (e e' : R) : Prop := e' <= stage_bound s e.

Lemma stage_bound_mono {m1 m2} (s : stage m1 m2) (x y : R) :
  x <= y -> stage_bound s x <= stage_bound s y.
Proof. destruct s as [? ? c | ? ? t]; simpl; [apply contract_bound_mono | apply tf_mono]. Qed.

(** If a stage holds on [(e, e')] and [e <= x], then [e' <= bound x]: an upper bound of the
    input gives an upper bound of the output. *)
Lemma stage_holds_upper {m1 m2} (s : stage m1 m2) (e e' x : R) :
  stage_holds s e e' -> e <= x -> e' <= stage_bound s x.
Proof. intros H Hx. eapply Rle_trans; [exact H | apply stage_bound_mono, Hx]. Qed.

(** The two readings of a stage agree: [e' <= bound e] iff [e' <= bound x] for all [x >= e]. *)
Lemma stage_holds_iff {m1 m2} (s : stage m1 m2) (e e' : R) :
  stage_holds s e e' <-> (forall x, e <= x -> e' <= stage_bound s x).
Proof.
  split; [intros H x; apply stage_holds_upper, H | intros H; apply H, Rle_refl].
Qed.

(** Counterexample beside [stage_holds_upper]: for a decreasing [f x = -x], the pair [(0, 0)]
    satisfies [e' <= f e] but the input bound [x = 1] gives [f 1 = -1 < 0 = e']. *)
Lemma transfer_needs_mono :
  let f := fun x : R => - x in 0 <= f 0 /\ 0 <= 1 /\ ~ (0 <= f 1).
Proof. simpl. lra. Qed.

(** ** Chains *)

(** A chain from [m1] to [m3]: stages whose metrics line up, first stage first. *)
Inductive chain : metric -> metric -> Type :=
  | cnil (m : metric) : chain m m
  | ccons {m1 m2 m3} : stage m1 m2 -> chain m2 m3 -> chain m1 m3.

(** The trace value: the chain's upper bound on the end error for an input bound [x]. *)
Fixpoint trace {m1 m3} (c : chain m1 m3) (x : R) : R :=
  match c with
  | cnil _ => x
  | ccons s rest => trace rest (stage_bound s x)
  end.

(** Number of stages; a chain of [n] stages has [n + 1] metric positions. *)
Fixpoint stages {m1 m3} (c : chain m1 m3) : nat :=
  match c with
  | cnil _ => O
  | ccons _ rest => S (stages rest)
  end.

(** Every stage holds on consecutive errors: [e k] is the error at position [k]. *)
Fixpoint chain_holds {m1 m3} (c : chain m1 m3) (e : nat -> R) : Prop :=
  match c with
  | cnil _ => True
  | ccons s rest => stage_holds s (e O) (e 1%nat) /\ chain_holds rest (fun k => e (S k))
  end.

(** Whole-chain soundness: if every stage holds on the errors [e 0, ..., e n] along the chain
    and [e 0 <= x], then [e n <= trace c x]. *)
Theorem chain_sound {m1 m3} (c : chain m1 m3) :
  forall (e : nat -> R) (x : R), chain_holds c e -> e O <= x -> e (stages c) <= trace c x.
Proof.
  induction c as [m | m1 m2 m3 s rest IH]; intros e x H Hx; simpl in *; [exact Hx|].
  destruct H as [Hs Hrest].
  apply (IH (fun k => e (S k))); [exact Hrest|]. eapply stage_holds_upper; eassumption.
Qed.

(** The trace is nondecreasing in the input bound. *)
Lemma trace_mono {m1 m3} (c : chain m1 m3) : forall x y, x <= y -> trace c x <= trace c y.
Proof.
  induction c as [m | m1 m2 m3 s rest IH]; intros x y H; simpl; [exact H|].
  apply IH, stage_bound_mono, H.
Qed.

(** Concatenation of chains that meet at [m2]. *)
Fixpoint chain_app {m1 m2 m3} (c1 : chain m1 m2) : chain m2 m3 -> chain m1 m3 :=
  match c1 in chain a b return chain b m3 -> chain a m3 with
  | cnil _ => fun c2 => c2
  | ccons s rest => fun c2 => ccons s (chain_app rest c2)
  end.

(** [trace (c1 ++ c2) x = trace c2 (trace c1 x)]. *)
Lemma trace_app {m1 m2 m3} (c1 : chain m1 m2) (c2 : chain m2 m3) (x : R) :
  trace (chain_app c1 c2) x = trace c2 (trace c1 x).
Proof.
  revert x. induction c1 as [m | a b c s rest IH]; intros x; simpl; [reflexivity|]. apply IH.
Qed.

(** Prepend a stage to a collapsed tail: [Some (tail o f)] for an affine stage, [None] for a
    transfer. *)
Definition stage_then {m1 m2 m3} (s : stage m1 m2) : option (contract m2 m3) -> option (contract m1 m3) :=
  match s in stage a b return option (contract b m3) -> option (contract a m3) with
  | affine f => fun k => match k with Some g => Some (comp g f) | None => None end
  | mono _ => fun _ => None
  end.

(** The single affine contract of an all-affine chain ([Chain.compose] in Python). *)
Fixpoint collapse {m1 m3} (c : chain m1 m3) : option (contract m1 m3) :=
  match c with
  | cnil m => Some (ident m)
  | ccons s rest => stage_then s (collapse rest)
  end.

(** An all-affine chain and its collapsed contract give the same bound. *)
Theorem collapse_trace {m1 m3} (c : chain m1 m3) :
  forall k, collapse c = Some k -> forall x, trace c x = contract_bound k x.
Proof.
  induction c as [m | m1 m2 m3 s rest IH]; intros k Hk x; simpl in *.
  - injection Hk as <-. unfold contract_bound; simpl. ring.
  - destruct s as [a b f | a b t]; simpl in Hk; [|discriminate].
    destruct (collapse rest) as [g|] eqn:Hg; [|discriminate].
    injection Hk as <-. rewrite comp_bound. simpl. apply IH. reflexivity.
Qed.

(** ** Parallel composition *)

(** Two evaluated chains into the same metric [m] add ([contracts.parallel]): the bound is
    [trace c1 x1 + trace c2 x2]. A chain into another metric is a type error. *)
Definition par_bound {a b m} (c1 : chain a m) (c2 : chain b m) (x1 x2 : R) : R :=
  trace c1 x1 + trace c2 x2.

(** Parallel soundness: if the total error is at most the sum of the two end errors (a
    triangle inequality in [m], e.g. [tv_triangle]) and both chains are sound, then
    [e <= trace c1 x1 + trace c2 x2]. *)
Theorem parallel_sound {a b m} (c1 : chain a m) (c2 : chain b m) (e1 e2 : nat -> R)
    (x1 x2 e : R) :
  chain_holds c1 e1 -> e1 O <= x1 -> chain_holds c2 e2 -> e2 O <= x2 ->
  e <= e1 (stages c1) + e2 (stages c2) -> e <= par_bound c1 c2 x1 x2.
Proof.
  intros H1 Hx1 H2 Hx2 He. unfold par_bound.
  pose proof (chain_sound c1 e1 x1 H1 Hx1). pose proof (chain_sound c2 e2 x2 H2 Hx2). lra.
Qed.

(** The triangle inequality of TV: [tv p p'' <= tv p p' + tv p' p'']. It licenses adding two
    error terms in [attn_dist:tv@read] (exact to intermediate, intermediate to served). *)
Lemma tv_triangle (n : nat) (p p' p'' : nat -> R) : tv n p p'' <= tv n p p' + tv n p' p''.
Proof.
  unfold tv. rewrite <- Rmult_plus_distr_l, <- sum_plus.
  apply Rmult_le_compat_l; [lra|]. apply sum_le. intros t _.
  replace (p t - p'' t) with ((p t - p' t) + (p' t - p'' t)) by ring. apply Rabs_triang.
Qed.

(** Counterexample beside [parallel_sound]: without the triangle hypothesis nothing follows;
    two chains bounding [0] each say nothing about an error [1]. *)
Lemma parallel_needs_triangle : ~ (1 <= 0 + 0).
Proof. lra. Qed.

(** ** The bridge catalogue ([bridges.py]) as typed stages *)

(** Storage [(1, W)]: entry error at the write to entry error at the read. *)
Definition storage (w : nonnegreal) : contract entryL2Write entryL2Read := mk_contract nn_one w.
Definition latent_storage (w : nonnegreal) : contract latentL2Write latentL2Read := mk_contract nn_one w.

(** Score bridge [(q, 0)], [q = scale * max ||q||] (Cauchy-Schwarz). *)
Definition score_bridge (q : nonnegreal) : contract entryL2Read scoreLinfRead := mk_contract q nn_zero.
Definition latent_score_bridge (q : nonnegreal) : contract latentL2Read scoreLinfRead := mk_contract q nn_zero.

(** Banded score bridge fused with storage [(q, C)]. *)
Definition banded_score_bridge (q c : nonnegreal) : contract entryL2Write scoreLinfRead := mk_contract q c.

(** [osc <= 2 * linf]: [(2, 0)]. *)
Definition nn_two : nonnegreal := mknonnegreal 2 (Rlt_le _ _ Rlt_0_2).
Definition osc_bridge : contract scoreLinfRead scoreOscRead := mk_contract nn_two nn_zero.

(** E-form moment, a source stage [(0, x)] at the exact input. *)
Definition eform_moment (x : nonnegreal) : contract entryL2Write scoreEformExcessRead := mk_contract nn_zero x.

(** Selection lemma [(1, b_S)] in selector-score mass. *)
Definition selection (b : nonnegreal) : contract selectorDistTvSelect selectorDistTvSelect := mk_contract nn_one b.

(** The empirical selector-to-attention step [(rho, 0)] (a paired measurement, no theorem). *)
Definition selector_to_attention (rho : nonnegreal) : contract selectorDistTvSelect attnDistTvRead :=
  mk_contract rho nn_zero.

(** [TV <= (e^(2x) - 1)/2] from a uniform score error [x]. *)
Definition softmax_tv : transfer scoreLinfRead attnDistTvRead.
Proof.
  refine (mk_transfer (fun x => (exp (2 * x) - 1) / 2) _).
  intros x y H. unfold Rdiv. apply Rmult_le_compat_r; [lra|].
  apply Rplus_le_compat_r, exp_le_mono. lra.
Defined.

(** [TV <= tanh(x/4)] from the oscillation [x] of the score error. *)
Definition centred_tv : transfer scoreOscRead attnDistTvRead.
Proof.
  refine (mk_transfer (fun x => tanh (x / 4)) _).
  intros x y H. apply tanh_mono. lra.
Defined.

(** [TV <= y + y^2/2], [y = max(0, x)], from the e-form excess [x] (for [x >= 0] this is
    [((1 + x)^2 - 1)/2]; the clamp keeps [f] monotone on all of [R]). *)
Definition eform_tv : transfer scoreEformExcessRead attnDistTvRead.
Proof.
  refine (mk_transfer (fun x => Rmax 0 x + Rmax 0 x * Rmax 0 x / 2) _).
  intros x y H.
  assert (0 <= Rmax 0 x) by apply Rmax_l.
  assert (Rmax 0 x <= Rmax 0 y) by (apply Rmax_lub; [apply Rmax_l | eapply Rle_trans; [exact H | apply Rmax_r]]).
  assert (Rmax 0 x * Rmax 0 x <= Rmax 0 y * Rmax 0 y) by (apply Rmult_le_compat; assumption).
  lra.
Defined.

Notation "s ;; c" := (ccons s c) (at level 60, right associativity).

(** The plain read chain: storage, score bridge, softmax TV. *)
Definition plain_chain (q w : nonnegreal) : chain entryL2Write attnDistTvRead :=
  affine (storage w) ;; affine (score_bridge q) ;; mono softmax_tv ;; cnil _.

(** The latent plain chain. *)
Definition latent_plain_chain (q w : nonnegreal) : chain latentL2Write attnDistTvRead :=
  affine (latent_storage w) ;; affine (latent_score_bridge q) ;; mono softmax_tv ;; cnil _.

(** The centred chain: banded score bridge, osc bridge, centred TV. *)
Definition centred_chain (q c : nonnegreal) : chain entryL2Write attnDistTvRead :=
  affine (banded_score_bridge q c) ;; affine osc_bridge ;; mono centred_tv ;; cnil _.

(** The e-form chain: moment, e-form TV. *)
Definition eform_chain (x : nonnegreal) : chain entryL2Write attnDistTvRead :=
  affine (eform_moment x) ;; mono eform_tv ;; cnil _.

(** The plain chain at the exact input: [TV <= (e^(2 q W) - 1)/2] (paper eq. tvbridge). *)
Lemma plain_chain_trace (q w : nonnegreal) :
  trace (plain_chain q w) 0 = (exp (2 * (q * w)) - 1) / 2.
Proof.
  simpl. unfold contract_bound; simpl.
  replace (q * (1 * 0 + w) + 0) with (q * w) by ring. reflexivity.
Qed.

(** The centred chain at the exact input: [TV <= tanh((2C)/4) = tanh(C/2)]. *)
Lemma centred_chain_trace (q c : nonnegreal) : trace (centred_chain q c) 0 = tanh (c / 2).
Proof. simpl. unfold contract_bound; simpl. f_equal. field. Qed.

(** The selector term of the repaired chain: selection, then the rho bridge. *)
Definition selector_term (b rho : nonnegreal) : chain selectorDistTvSelect attnDistTvRead :=
  affine (selection b) ;; affine (selector_to_attention rho) ;; cnil _.

(** The repaired C4 bound [TV_L = (e^(2 q W) - 1)/2 + rho * b_S] (paper section 3.5): the
    storage chain and the selector term, in parallel in [attn_dist:tv@read]. *)
Definition repaired_bound (q w b rho : nonnegreal) : R :=
  par_bound (plain_chain q w) (selector_term b rho) 0 0.

Lemma repaired_bound_eq (q w b rho : nonnegreal) :
  repaired_bound q w b rho = (exp (2 * (q * w)) - 1) / 2 + rho * b.
Proof. unfold repaired_bound, par_bound. rewrite plain_chain_trace. simpl. unfold contract_bound; simpl. ring. Qed.

(** The selector term collapses to the single contract [(rho, rho * b_S)]. *)
Lemma selector_term_collapse (b rho : nonnegreal) (x : R) :
  trace (selector_term b rho) x = rho * x + rho * b.
Proof. simpl. unfold contract_bound; simpl. ring. Qed.

(** Rejected (paper section 3.4): the selection stage directly after the storage stage. The
    storage output [entry:l2@read] is not the selection input [selector_dist:tv@select]. *)
Fail Definition rejected_chain (w b : nonnegreal) :=
  affine (storage w) ;; affine (selection b) ;; cnil _.

(** The same rejection for the bare affine composition ([#check_failure comp selectC storeC]). *)
Fail Definition rejected_comp (w b : nonnegreal) := comp (selection b) (storage w).

(** Regression: the selection stage must fail to attach to the attention chain. *)
Fail Definition selection_after_attention (q w b : nonnegreal) :=
  chain_app (plain_chain q w) (affine (selection b) ;; cnil _).

(** Rejected: the selector mass added to an attention TV without the rho bridge. *)
Fail Definition selector_without_rho (q w b : nonnegreal) :=
  par_bound (plain_chain q w) (affine (selection b) ;; cnil _) 0 0.

(** Rejected: a latent storage bound fed to the dense score bridge. *)
Fail Definition latent_into_dense (q w : nonnegreal) :=
  affine (latent_storage w) ;; affine (score_bridge q) ;; cnil _.

(** Rejected: a uniform score error fed to the centred transfer (it expects an oscillation). *)
Fail Definition linf_into_centred (q w : nonnegreal) :=
  affine (storage w) ;; affine (score_bridge q) ;; mono centred_tv ;; cnil _.

(** Use of [chain_sound] on the plain chain: for errors [e0 = 0] (the exact write),
    [e1 <= e0 + W] (storage), [e2 <= q e1] (score bridge) and [e3 <= (e^(2 e2) - 1)/2]
    (softmax bridge), the served TV satisfies [e3 <= (e^(2 q W) - 1)/2]. *)
Lemma plain_chain_sound (q w : nonnegreal) (e : nat -> R) :
  e O = 0 -> chain_holds (plain_chain q w) e -> e 3%nat <= (exp (2 * (q * w)) - 1) / 2.
Proof.
  intros H0 H. rewrite <- plain_chain_trace.
  apply (chain_sound (plain_chain q w) e 0 H). rewrite H0. apply Rle_refl.
Qed.
