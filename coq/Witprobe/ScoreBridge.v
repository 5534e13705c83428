(** * Score bridge: from band residual norms to a per-key score-error bound

    Vectors are [nat -> R] read on [0 .. d-1] (see [Sum]). Definitions:
    - [dot d x y = sum_i x_i y_i], [norm2 d x = sqrt (sum_i x_i^2)];
    - a banded vector is [nat -> nat -> R] (band [b], index [i] inside the band); band [b] has
      width [w b]; [bdot nb w x y = sum_b dot (w b) (x b) (y b)],
      [bnorm nb w x = sqrt (sum_b sum_i (x b i)^2)], [bdiff x y = x - y] bandwise;
    - [banded_witness nb w q dk = sum_b ||q_b|| * ||dk_b||].

    Banded = flat reordered by bands. With [offset w b = w 0 + ... + w (b-1)] and
    [band_split w x b i = x (offset w b + i)], [bdot_flat] proves
    [bdot nb w (band_split w x) (band_split w y) = dot (offset w nb) x y] and [bnorm_flat] the same
    for the norm: a banded dot product is the flat dot product with its terms regrouped by bands.
    The production meter (python/witprobe/probe/meters.py: [band_norms], [band_witness],
    [read_rows_from_scores]) splits the last dimension [D] into [bands] contiguous bands of equal
    width [D / bands] ([x.reshape(..., bands, D // bands)], so band [b] holds the flat indices
    [b * (D/bands) .. (b+1) * (D/bands) - 1]); this is [band_split (fun _ => D / bands)], and
    [offset_const] gives [offset (fun _ => wd) b = b * wd]. The dense meter uses [D = head_dim]
    and [bands = gcd(head_dim, requested bands)] ([witness_cache.bands_for]).

    The meter's per-key bound is [c_t = scale * sum_b ||q_b|| * ||Delta k_{t,b}||], i.e.
    [scale * banded_witness nb w q (bdiff k k')] ([score_bridge_banded]); its plain bound uses
    [scale * ||q|| * W_t] with [W_t = sum_b ||Delta k_{t,b}||] ([score_bridge_plain]).

    Main results:
    - [cauchy_schwarz]: [|dot d x y| <= norm2 d x * norm2 d y];
    - [bdot_flat], [bnorm_flat], [offset_const]: banded = flat regrouped by bands;
    - [score_bridge_banded]: [|scale bdot q k - scale bdot q k'| <= scale * banded_witness q (k - k')];
    - [banded_witness_le_plain]: [sum_b ||q_b|| ||dk_b|| <= ||q|| * sum_b ||dk_b||];
    - [score_bridge_plain]: [|scale bdot q k - scale bdot q k'| <= scale * ||q|| * sum_b ||dk_b||].
    Counterexamples: [norm2_needs_sqrt], [score_bridge_needs_scale_nonneg],
    [banded_witness_le_plain_strict]. *)

From Coq Require Import Reals Lra Lia.
From Witprobe Require Import Sum.
Open Scope R_scope.

Definition dot (d : nat) (x y : nat -> R) : R := sum d (fun i => x i * y i).

Definition norm2 (d : nat) (x : nat -> R) : R := sqrt (sum d (fun i => x i * x i)).

(** ** Helpers *)

Lemma sq_nonneg (r : R) : 0 <= r * r.
Proof. apply Rle_0_sqr. Qed.

Lemma sumsq_nonneg (d : nat) (x : nat -> R) : 0 <= sum d (fun i => x i * x i).
Proof. apply sum_nonneg. intros i _. apply sq_nonneg. Qed.

Lemma norm2_nonneg (d : nat) (x : nat -> R) : 0 <= norm2 d x.
Proof. apply sqrt_pos. Qed.

Lemma norm2_sq (d : nat) (x : nat -> R) : norm2 d x * norm2 d x = sum d (fun i => x i * x i).
Proof. apply sqrt_sqrt, sumsq_nonneg. Qed.

(** [dot] is linear in its second argument: [<x, y> - <x, y'> = <x, y - y'>]. *)
Lemma dot_minus_r (d : nat) (x y y' : nat -> R) :
  dot d x y - dot d x y' = dot d x (fun i => y i - y' i).
Proof. unfold dot. rewrite <- sum_minus. apply sum_ext. intros i _. ring. Qed.

(** The induction step of Cauchy-Schwarz: if [A^2 <= X Y] with [X, Y >= 0] then
    [(A + a b)^2 <= (X + a^2) (Y + b^2)]. *)
Lemma cs_step (A X Y a b : R) :
  0 <= X -> 0 <= Y -> A * A <= X * Y ->
  (A + a * b) * (A + a * b) <= (X + a * a) * (Y + b * b).
Proof.
  intros HX HY H.
  pose proof (sq_nonneg a). pose proof (sq_nonneg b).
  assert (HP : 0 <= X * (b * b) + Y * (a * a))
    by (apply Rplus_le_le_0_compat; apply Rmult_le_pos; assumption).
  assert (HQ : (2 * A * (a * b)) * (2 * A * (a * b))
               <= (X * (b * b) + Y * (a * a)) * (X * (b * b) + Y * (a * a))).
  { pose proof (sq_nonneg (X * (b * b) - Y * (a * a))).
    assert (A * A * ((a * b) * (a * b)) <= X * Y * ((a * b) * (a * b)))
      by (apply Rmult_le_compat_r; [apply sq_nonneg | exact H]).
    nra. }
  assert (2 * A * (a * b) <= X * (b * b) + Y * (a * a)) by nra.
  nra.
Qed.

(** Squared Cauchy-Schwarz: [(sum_i x_i y_i)^2 <= (sum_i x_i^2) (sum_i y_i^2)]. *)
Lemma cauchy_schwarz_sq (d : nat) (x y : nat -> R) :
  dot d x y * dot d x y <= sum d (fun i => x i * x i) * sum d (fun i => y i * y i).
Proof.
  induction d as [|d IH]; unfold dot in *; simpl; [lra|].
  apply cs_step; [apply sumsq_nonneg | apply sumsq_nonneg | exact IH].
Qed.

(** [|A| <= sqrt X * sqrt Y] from [A^2 <= X Y] and [X, Y >= 0]. *)
Lemma abs_le_sqrt_mult (A X Y : R) :
  0 <= X -> 0 <= Y -> A * A <= X * Y -> Rabs A <= sqrt X * sqrt Y.
Proof.
  intros HX HY H. rewrite <- sqrt_mult_alt by exact HX.
  rewrite <- sqrt_Rsqr_abs. apply sqrt_le_1_alt. unfold Rsqr. exact H.
Qed.

(** ** Cauchy-Schwarz *)

(** [|sum_i x_i y_i| <= ||x||_2 ||y||_2]. *)
Theorem cauchy_schwarz : forall d x y, Rabs (dot d x y) <= norm2 d x * norm2 d y.
Proof.
  intros d x y. apply abs_le_sqrt_mult; [apply sumsq_nonneg | apply sumsq_nonneg |].
  apply cauchy_schwarz_sq.
Qed.

(** Counterexample: the squared norms (no square root) are not a bound. For [d = 1] and
    [x = y = 1/2]: [|<x, y>| = 1/4 > 1/16 = (sum x^2) (sum y^2)]. *)
Lemma norm2_needs_sqrt :
  let x := fun _ : nat => / 2 in
  Rabs (dot 1 x x) > sum 1 (fun i => x i * x i) * sum 1 (fun i => x i * x i).
Proof. simpl. unfold dot. simpl. rewrite Rabs_right; lra. Qed.

(** ** Banded vectors *)

Definition bdot (nb : nat) (w : nat -> nat) (x y : nat -> nat -> R) : R :=
  sum nb (fun b => dot (w b) (x b) (y b)).

Definition bnorm (nb : nat) (w : nat -> nat) (x : nat -> nat -> R) : R :=
  sqrt (sum nb (fun b => sum (w b) (fun i => x b i * x b i))).

Definition bdiff (x y : nat -> nat -> R) : nat -> nat -> R := fun b i => x b i - y b i.

Definition banded_witness (nb : nat) (w : nat -> nat) (q dk : nat -> nat -> R) : R :=
  sum nb (fun b => norm2 (w b) (q b) * norm2 (w b) (dk b)).

(** Start of band [b] in the flat vector: [w 0 + ... + w (b-1)]. *)
Fixpoint offset (w : nat -> nat) (b : nat) : nat :=
  match b with
  | O => O
  | S b' => (offset w b' + w b')%nat
  end.

(** The banded view of a flat vector: band [b], index [i] is flat index [offset w b + i]. *)
Definition band_split (w : nat -> nat) (x : nat -> R) : nat -> nat -> R :=
  fun b i => x (offset w b + i)%nat.

(** Equal widths (the production layout): band [b] starts at [b * wd]. *)
Lemma offset_const (wd b : nat) : offset (fun _ => wd) b = (b * wd)%nat.
Proof. induction b as [|b IH]; simpl; [reflexivity|]. rewrite IH. lia. Qed.

(** A sum over [a + c] indices is the sum over the first [a] plus the shifted sum over [c]. *)
Lemma sum_app (a c : nat) (f : nat -> R) :
  sum (a + c) f = sum a f + sum c (fun i => f (a + i)%nat).
Proof.
  induction c as [|c IH]; simpl.
  - rewrite Nat.add_0_r. ring.
  - rewrite Nat.add_succ_r. simpl. rewrite IH. ring.
Qed.

(** Regrouping a flat sum by bands. *)
Lemma sum_bands (nb : nat) (w : nat -> nat) (f : nat -> R) :
  sum (offset w nb) f = sum nb (fun b => sum (w b) (fun i => f (offset w b + i)%nat)).
Proof. induction nb as [|nb IH]; simpl; [reflexivity|]. rewrite sum_app, IH. reflexivity. Qed.

(** The banded dot product is the flat dot product reordered by bands. *)
Theorem bdot_flat (nb : nat) (w : nat -> nat) (x y : nat -> R) :
  bdot nb w (band_split w x) (band_split w y) = dot (offset w nb) x y.
Proof. unfold bdot, dot, band_split. rewrite sum_bands. reflexivity. Qed.

Theorem bnorm_flat (nb : nat) (w : nat -> nat) (x : nat -> R) :
  bnorm nb w (band_split w x) = norm2 (offset w nb) x.
Proof. unfold bnorm, norm2, band_split. rewrite sum_bands. reflexivity. Qed.

(** Splitting commutes with the residual. *)
Lemma band_split_diff (w : nat -> nat) (x y : nat -> R) :
  band_split w (fun t => x t - y t) = bdiff (band_split w x) (band_split w y).
Proof. reflexivity. Qed.

Lemma bdot_minus_r (nb : nat) (w : nat -> nat) (q k k' : nat -> nat -> R) :
  bdot nb w q k - bdot nb w q k' = bdot nb w q (bdiff k k').
Proof.
  unfold bdot. rewrite <- sum_minus. apply sum_ext. intros b _. apply dot_minus_r.
Qed.

(** Per band Cauchy-Schwarz, summed: [|bdot q dk| <= sum_b ||q_b|| ||dk_b||]. *)
Lemma bdot_le_banded_witness (nb : nat) (w : nat -> nat) (q dk : nat -> nat -> R) :
  Rabs (bdot nb w q dk) <= banded_witness nb w q dk.
Proof.
  eapply Rle_trans; [apply sum_abs_le|]. apply sum_le. intros b _. apply cauchy_schwarz.
Qed.

Lemma banded_witness_nonneg (nb : nat) (w : nat -> nat) (q dk : nat -> nat -> R) :
  0 <= banded_witness nb w q dk.
Proof. apply sum_nonneg. intros b _. apply Rmult_le_pos; apply norm2_nonneg. Qed.

Lemma abs_scal_diff (scale a a' : R) :
  0 <= scale -> Rabs (scale * a - scale * a') = scale * Rabs (a - a').
Proof.
  intros Hs. rewrite <- Rmult_minus_distr_l, Rabs_mult, (Rabs_right scale) by lra. reflexivity.
Qed.

(** ** The score bridges *)

(** Banded score bridge: for [scale >= 0],
    [|scale <q, k> - scale <q, k'>| <= scale * sum_b ||q_b|| ||k_b - k'_b||]. *)
Theorem score_bridge_banded : forall nb w q k k' scale,
  0 <= scale ->
  Rabs (scale * bdot nb w q k - scale * bdot nb w q k')
    <= scale * banded_witness nb w q (bdiff k k').
Proof.
  intros nb w q k k' scale Hs. rewrite abs_scal_diff by exact Hs. rewrite bdot_minus_r.
  apply Rmult_le_compat_l; [exact Hs|]. apply bdot_le_banded_witness.
Qed.

(** Counterexample: a negative scale breaks the bridge ([nb = w = 1], [q = k = 1], [k' = 0],
    [scale = -1]: left side [1], right side [-1]). *)
Lemma score_bridge_needs_scale_nonneg :
  let one := fun _ _ : nat => 1 in
  let zero := fun _ _ : nat => 0 in
  Rabs (-1 * bdot 1 (fun _ => 1%nat) one one - -1 * bdot 1 (fun _ => 1%nat) one zero)
    > -1 * banded_witness 1 (fun _ => 1%nat) one (bdiff one zero).
Proof.
  unfold bdot, banded_witness, bdiff, norm2, dot. simpl.
  replace (0 + 1 * 1) with 1 by ring. replace (0 + (1 - 0) * (1 - 0)) with 1 by ring.
  rewrite sqrt_1. pose proof (Rabs_pos (-1 * (0 + 1) - -1 * (0 + (0 + 1 * 0)))). lra.
Qed.

(** A band norm is at most the whole norm: [||q_b|| <= ||q||]. *)
Lemma band_norm_le_bnorm (nb : nat) (w : nat -> nat) (q : nat -> nat -> R) (b : nat) :
  (b < nb)%nat -> norm2 (w b) (q b) <= bnorm nb w q.
Proof.
  intros Hb. unfold norm2, bnorm. apply sqrt_le_1_alt.
  apply (sum_term_le nb (fun b => sum (w b) (fun i => q b i * q b i))); [|exact Hb].
  intros i _. apply sumsq_nonneg.
Qed.

(** [sum_b ||q_b|| ||dk_b|| <= ||q|| * sum_b ||dk_b||]. *)
Theorem banded_witness_le_plain : forall nb w q dk,
  banded_witness nb w q dk <= bnorm nb w q * sum nb (fun b => norm2 (w b) (dk b)).
Proof.
  intros nb w q dk. unfold banded_witness. rewrite <- sum_scal_l. apply sum_le. intros b Hb.
  apply Rmult_le_compat_r; [apply norm2_nonneg|]. apply band_norm_le_bnorm, Hb.
Qed.

(** Counterexample to the converse (the banded witness is strictly sharper): two bands of width
    1, [q = (1 | 0)], [dk = (0 | 1)]: banded witness [0], plain [1 * 1 = 1]. *)
Lemma banded_witness_le_plain_strict :
  let q := fun b _ : nat => if Nat.eqb b 0 then 1 else 0 in
  let dk := fun b _ : nat => if Nat.eqb b 0 then 0 else 1 in
  banded_witness 2 (fun _ => 1%nat) q dk
    < bnorm 2 (fun _ => 1%nat) q * sum 2 (fun b => norm2 1 (dk b)).
Proof.
  unfold banded_witness, bnorm, norm2. simpl.
  replace (0 + 1 * 1) with 1 by ring. replace (0 + 0 * 0) with 0 by ring.
  replace (0 + 1 + 0) with 1 by ring.
  rewrite sqrt_1, sqrt_0. lra.
Qed.

(** Plain score bridge: for [scale >= 0],
    [|scale <q, k> - scale <q, k'>| <= scale * ||q|| * sum_b ||k_b - k'_b||]. *)
Theorem score_bridge_plain : forall nb w q k k' scale,
  0 <= scale ->
  Rabs (scale * bdot nb w q k - scale * bdot nb w q k')
    <= scale * (bnorm nb w q * sum nb (fun b => norm2 (w b) (bdiff k k' b))).
Proof.
  intros nb w q k k' scale Hs. eapply Rle_trans; [apply score_bridge_banded, Hs|].
  apply Rmult_le_compat_l; [exact Hs|]. apply banded_witness_le_plain.
Qed.
