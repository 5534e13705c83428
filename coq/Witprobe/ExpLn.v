(** * Monotonicity of [exp] and [ln]

    Small facts the chain, Ville and sentinel files share.

    Main results: [exp_le_mono], [exp_le_iff] ([x <= y <-> e^x <= e^y]), [ln_le_iff]
    (for positive arguments), [exp_Rmax] ([exp] commutes with [Rmax]), [ln_neg] ([ln q < 0]
    for [0 < q < 1]). Counterexample beside [ln_le_iff]: [ln_not_mono_at_zero] ([ln] is
    defined as 0 at 0 and below, so positivity is needed). *)

From Coq Require Import Reals Lra.
Open Scope R_scope.

(** [x <= y -> e^x <= e^y]. *)
Lemma exp_le_mono (x y : R) : x <= y -> exp x <= exp y.
Proof. intros [H|H]; [left; apply exp_increasing, H | right; rewrite H; reflexivity]. Qed.

(** [x <= y <-> e^x <= e^y]. *)
Lemma exp_le_iff (x y : R) : x <= y <-> exp x <= exp y.
Proof.
  split; [apply exp_le_mono|]. intros H. destruct (Rle_dec x y) as [Hxy|Hxy]; [exact Hxy|].
  exfalso. assert (exp y < exp x) by (apply exp_increasing; lra). lra.
Qed.

(** For [x, y > 0]: [ln x <= ln y <-> x <= y]. *)
Lemma ln_le_iff (x y : R) : 0 < x -> 0 < y -> (ln x <= ln y <-> x <= y).
Proof.
  intros Hx Hy. rewrite exp_le_iff, !exp_ln by assumption. reflexivity.
Qed.

(** [e^(max a b) = max (e^a) (e^b)]. *)
Lemma exp_Rmax (a b : R) : exp (Rmax a b) = Rmax (exp a) (exp b).
Proof.
  apply Rmax_case_strong; intros H.
  - rewrite Rmax_left; [reflexivity | apply exp_le_mono, H].
  - rewrite Rmax_right; [reflexivity | apply exp_le_mono, H].
Qed.

(** [ln q < 0] for [0 < q < 1]. *)
Lemma ln_neg (q : R) : 0 < q -> q < 1 -> ln q < 0.
Proof. intros H0 H1. rewrite <- ln_1. apply ln_increasing; assumption. Qed.

(** Counterexample: without positivity, [ln] is not monotone ([ln 0 = 0 > ln (1/2)]). *)
Lemma ln_not_mono_at_zero : 0 <= 1 / 2 /\ ~ (ln 0 <= ln (1 / 2)).
Proof.
  split; [lra|]. assert (ln (1 / 2) < 0) by (apply ln_neg; lra).
  assert (ln 0 = 0) as ->. { unfold ln. destruct (Rlt_dec 0 0) as [H0|]; [exfalso; lra | reflexivity]. }
  lra.
Qed.
