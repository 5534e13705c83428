(** * Latent (MLA) score bridge through the effective query

    In multi-head latent attention a cached token stores a latent [c] (width [dc]) and a RoPE key
    [kr] (width [dr]); a head reads the no-RoPE key [W c] through its up-projection [W] ([dn x dc],
    [(W c)_i = sum_j W i j * c j]) and scores
    [score (c, kr) = scale * (<qn, W c> + <qr, kr>)].
    The effective query is [u = W^T qn], [u_j = sum_i W i j * qn i]; then
    [<qn, W c> = <u, c>] ([adjoint]), so a latent residual [c - c'] enters the score linearly
    through [u].

    The production meter (python/witprobe/probe/meters_latent.py [latent_witness], used by
    python/witprobe/probe/latent.py [WitnessLatentLayer.read_inputs]) forms
    [c_t = sm * (sum_b ||u_b|| ||Delta c_{t,b}|| + sum_b ||q_pe,b|| ||Delta k_pe,{t,b}||)]
    with [u = effective_query(q_nope, W_UK)], [u] and [Delta c] split into [bands_c] contiguous bands
    of width [d_latent / bands_c] and [q_pe], [Delta k_pe] into [bands_pe] contiguous bands of width
    [d_rope / bands_pe] ([meters.band_norms]; the band counts are [gcd(width, bands)]). That is
    [latent_witness nbc (fun _ => wc) nbr (fun _ => wr) scale u qr (c - c') (kr - kr')] below,
    and [latent_score_bridge_production] proves it bounds the score error.

    Main results:
    - [adjoint]: [<qn, W c> = <W^T qn, c>];
    - [latent_score_diff]: [score (c, kr) - score (c', kr') = scale (<u, c - c'> + <qr, kr - kr'>)];
    - [latent_score_bridge]: latent part banded, RoPE part plain Cauchy-Schwarz;
    - [latent_score_bridge_banded] (any band widths) and [latent_score_bridge_production] (equal
      widths, the meter's exact formula);
    - [latent_score_bridge_plain]: [|Delta score| <= scale * max (||u||, ||qr||) * (W_c + W_r)],
      the meter's plain form ([read_rows_from_scores]: [q_coef = scale * max_comp ||q_comp||],
      [W = sum_comp sum_b ||Delta_b||]).
    Counterexamples: [adjoint_needs_transpose], [latent_bridge_needs_effective_query],
    [latent_plain_needs_max]. *)

From Coq Require Import Reals Lra Lia.
From Witprobe Require Import Sum ScoreBridge.
Open Scope R_scope.

Definition matvec (dc : nat) (W : nat -> nat -> R) (c : nat -> R) : nat -> R :=
  fun i => sum dc (fun j => W i j * c j).

(** The effective query [u = W^T qn]. *)
Definition eff_query (dn : nat) (W : nat -> nat -> R) (qn : nat -> R) : nat -> R :=
  fun j => sum dn (fun i => W i j * qn i).

Definition vdiff (x y : nat -> R) : nat -> R := fun i => x i - y i.

Definition latent_score (dn dc dr : nat) (scale : R) (W : nat -> nat -> R) (qn qr c kr : nat -> R)
  : R := scale * (dot dn qn (matvec dc W c) + dot dr qr kr).

(** The meter's per-key bound: [scale * (sum_b ||u_b|| ||dc_b|| + sum_b ||qr_b|| ||dkr_b||)], bands
    of the flat vectors taken by [band_split] ([ScoreBridge]). *)
Definition latent_witness (nbc : nat) (wc : nat -> nat) (nbr : nat) (wr : nat -> nat) (scale : R)
  (u qr dc dkr : nat -> R) : R :=
  scale * (banded_witness nbc wc (band_split wc u) (band_split wc dc)
           + banded_witness nbr wr (band_split wr qr) (band_split wr dkr)).

(** ** Helpers *)

(** Exchanging a double finite sum. *)
Lemma sum_swap (n m : nat) (f : nat -> nat -> R) :
  sum n (fun i => sum m (fun j => f i j)) = sum m (fun j => sum n (fun i => f i j)).
Proof.
  induction n as [|n IH]; simpl.
  - rewrite sum_const. ring.
  - rewrite IH, <- sum_plus. reflexivity.
Qed.

Lemma dot_vdiff (d : nat) (x y y' : nat -> R) : dot d x y - dot d x y' = dot d x (vdiff y y').
Proof. apply dot_minus_r. Qed.

(** ** The adjoint identity *)

(** [<qn, W c> = <W^T qn, c>]. *)
Theorem adjoint (dn dc : nat) (W : nat -> nat -> R) (qn c : nat -> R) :
  dot dn qn (matvec dc W c) = dot dc (eff_query dn W qn) c.
Proof.
  unfold dot, matvec, eff_query.
  transitivity (sum dn (fun i => sum dc (fun j => W i j * c j * qn i))).
  - apply sum_ext. intros i _. rewrite <- sum_scal_l. apply sum_ext. intros j _. ring.
  - rewrite sum_swap. apply sum_ext. intros j _. rewrite <- sum_scal_r.
    apply sum_ext. intros i _. ring.
Qed.

(** Counterexample: the untransposed product [u'_j = sum_i W j i qn i] is wrong. With
    [W = [[0, 1], [0, 0]]], [qn = e_0], [c = e_1]: [<qn, W c> = 1] but [<u', c> = 0]. *)
Lemma adjoint_needs_transpose :
  let W := fun i j : nat => if andb (Nat.eqb i 0) (Nat.eqb j 1) then 1 else 0 in
  let e0 := fun i : nat => if Nat.eqb i 0 then 1 else 0 in
  let e1 := fun i : nat => if Nat.eqb i 1 then 1 else 0 in
  dot 2 e0 (matvec 2 W e1) <> dot 2 (eff_query 2 (fun i j => W j i) e0) e1.
Proof. unfold dot, matvec, eff_query. simpl. lra. Qed.

(** ** The bridge *)

(** [score (c, kr) - score (c', kr') = scale * (<u, c - c'> + <qr, kr - kr'>)], [u = W^T qn]. *)
Theorem latent_score_diff (dn dc dr : nat) (scale : R) (W : nat -> nat -> R)
  (qn qr c c' kr kr' : nat -> R) :
  latent_score dn dc dr scale W qn qr c kr - latent_score dn dc dr scale W qn qr c' kr'
    = scale * (dot dc (eff_query dn W qn) (vdiff c c') + dot dr qr (vdiff kr kr')).
Proof.
  unfold latent_score. rewrite !adjoint, <- !dot_vdiff. ring.
Qed.

(** Cauchy-Schwarz per band on a flat vector: [|<x, y>| <= sum_b ||x_b|| ||y_b||]. *)
Lemma dot_le_banded_witness (nb : nat) (w : nat -> nat) (x y : nat -> R) :
  Rabs (dot (offset w nb) x y) <= banded_witness nb w (band_split w x) (band_split w y).
Proof. rewrite <- bdot_flat. apply bdot_le_banded_witness. Qed.

(** Generic form: bounds [A] on [|<u, dc>|] and [B] on [|<qr, dkr>|] bound the score error. *)
Lemma latent_score_bridge_of (dn dc dr : nat) (scale A B : R) (W : nat -> nat -> R)
  (qn qr c c' kr kr' : nat -> R) :
  0 <= scale ->
  Rabs (dot dc (eff_query dn W qn) (vdiff c c')) <= A ->
  Rabs (dot dr qr (vdiff kr kr')) <= B ->
  Rabs (latent_score dn dc dr scale W qn qr c kr - latent_score dn dc dr scale W qn qr c' kr')
    <= scale * (A + B).
Proof.
  intros Hs HA HB. rewrite latent_score_diff, Rabs_mult, (Rabs_right scale) by lra.
  apply Rmult_le_compat_l; [exact Hs|].
  eapply Rle_trans; [apply Rabs_triang | lra].
Qed.

(** Latent part banded, RoPE part plain: for [scale >= 0],
    [|score (c, kr) - score (c', kr')| <= scale * (sum_b ||u_b|| ||(c - c')_b|| + ||qr|| ||kr - kr'||)]. *)
Theorem latent_score_bridge (dn nbc : nat) (wc : nat -> nat) (dr : nat) (scale : R)
  (W : nat -> nat -> R) (qn qr c c' kr kr' : nat -> R) :
  0 <= scale ->
  Rabs (latent_score dn (offset wc nbc) dr scale W qn qr c kr
        - latent_score dn (offset wc nbc) dr scale W qn qr c' kr')
    <= scale * (banded_witness nbc wc (band_split wc (eff_query dn W qn)) (band_split wc (vdiff c c'))
                + norm2 dr qr * norm2 dr (vdiff kr kr')).
Proof.
  intros Hs. apply latent_score_bridge_of; [exact Hs | apply dot_le_banded_witness |].
  apply cauchy_schwarz.
Qed.

(** Both parts banded (any band widths): for [scale >= 0],
    [|score (c, kr) - score (c', kr')| <= latent_witness u qr (c - c') (kr - kr')]. *)
Theorem latent_score_bridge_banded (dn nbc : nat) (wc : nat -> nat) (nbr : nat) (wr : nat -> nat)
  (scale : R) (W : nat -> nat -> R) (qn qr c c' kr kr' : nat -> R) :
  0 <= scale ->
  Rabs (latent_score dn (offset wc nbc) (offset wr nbr) scale W qn qr c kr
        - latent_score dn (offset wc nbc) (offset wr nbr) scale W qn qr c' kr')
    <= latent_witness nbc wc nbr wr scale (eff_query dn W qn) qr (vdiff c c') (vdiff kr kr').
Proof.
  intros Hs. apply latent_score_bridge_of; [exact Hs | |]; apply dot_le_banded_witness.
Qed.

(** The meter's layout: [dc = nbc * wc], [dr = nbr * wr], equal-width contiguous bands. For
    [scale >= 0] the meter's [c_t] bounds the score error. *)
Theorem latent_score_bridge_production (dn nbc wc nbr wr : nat) (scale : R)
  (W : nat -> nat -> R) (qn qr c c' kr kr' : nat -> R) :
  0 <= scale ->
  Rabs (latent_score dn (nbc * wc) (nbr * wr) scale W qn qr c kr
        - latent_score dn (nbc * wc) (nbr * wr) scale W qn qr c' kr')
    <= latent_witness nbc (fun _ => wc) nbr (fun _ => wr) scale
         (eff_query dn W qn) qr (vdiff c c') (vdiff kr kr').
Proof.
  intros Hs. rewrite <- (offset_const wc nbc), <- (offset_const wr nbr).
  apply latent_score_bridge_banded, Hs.
Qed.

(** Counterexample: the raw query norm [||qn||] in place of [||u|| = ||W^T qn||] is not a bound.
    One-dimensional: [W = 2], [qn = 1], [c = 1], [c' = 0], [qr = kr = kr' = 0], [scale = 1]:
    the score error is [2], the would-be bound [||qn|| ||c - c'|| = 1]. *)
Lemma latent_bridge_needs_effective_query :
  let one := fun _ : nat => 1 in
  let zero := fun _ : nat => 0 in
  let W := fun _ _ : nat => 2 in
  Rabs (latent_score 1 1 1 1 W one zero one zero - latent_score 1 1 1 1 W one zero zero zero)
    > 1 * (norm2 1 one * norm2 1 (vdiff one zero) + norm2 1 zero * norm2 1 (vdiff zero zero)).
Proof.
  unfold latent_score, dot, matvec, norm2, vdiff. simpl.
  replace (1 * (0 + (0 + 1 * (0 + 2 * 1)) + (0 + 0 * 0)) - 1 * (0 + (0 + 1 * (0 + 2 * 0)) + (0 + 0 * 0)))
    with 2 by ring.
  replace (0 + 1 * 1) with 1 by ring. replace (0 + (1 - 0) * (1 - 0)) with 1 by ring.
  replace (0 + 0 * 0) with 0 by ring. replace (0 + (0 - 0) * (0 - 0)) with 0 by ring.
  rewrite sqrt_1, sqrt_0, Rabs_right; lra.
Qed.

(** Plain form: [sum_b ||x_b|| ||y_b|| <= ||x|| * sum_b ||y_b||] on a flat vector. *)
Lemma banded_witness_le_plain_flat (nb : nat) (w : nat -> nat) (x y : nat -> R) :
  banded_witness nb w (band_split w x) (band_split w y)
    <= norm2 (offset w nb) x * sum nb (fun b => norm2 (w b) (band_split w y b)).
Proof. rewrite <- bnorm_flat. apply banded_witness_le_plain. Qed.

Lemma band_norm_sum_nonneg (nb : nat) (w : nat -> nat) (y : nat -> R) :
  0 <= sum nb (fun b => norm2 (w b) (band_split w y b)).
Proof. apply sum_nonneg. intros b _. apply norm2_nonneg. Qed.

(** The meter's plain form: for [scale >= 0],
    [|score (c, kr) - score (c', kr')| <= scale * max (||u||, ||qr||) * (W_c + W_r)] with
    [W_c = sum_b ||(c - c')_b||] and [W_r = sum_b ||(kr - kr')_b||]. *)
Theorem latent_score_bridge_plain (dn nbc : nat) (wc : nat -> nat) (nbr : nat) (wr : nat -> nat)
  (scale : R) (W : nat -> nat -> R) (qn qr c c' kr kr' : nat -> R) :
  0 <= scale ->
  Rabs (latent_score dn (offset wc nbc) (offset wr nbr) scale W qn qr c kr
        - latent_score dn (offset wc nbc) (offset wr nbr) scale W qn qr c' kr')
    <= scale * Rmax (norm2 (offset wc nbc) (eff_query dn W qn)) (norm2 (offset wr nbr) qr)
       * (sum nbc (fun b => norm2 (wc b) (band_split wc (vdiff c c') b))
          + sum nbr (fun b => norm2 (wr b) (band_split wr (vdiff kr kr') b))).
Proof.
  intros Hs. eapply Rle_trans; [apply latent_score_bridge_banded, Hs|]. unfold latent_witness.
  rewrite Rmult_assoc. apply Rmult_le_compat_l; [exact Hs|].
  set (u := eff_query dn W qn).
  pose proof (banded_witness_le_plain_flat nbc wc u (vdiff c c')) as Hc.
  pose proof (banded_witness_le_plain_flat nbr wr qr (vdiff kr kr')) as Hr.
  pose proof (band_norm_sum_nonneg nbc wc (vdiff c c')).
  pose proof (band_norm_sum_nonneg nbr wr (vdiff kr kr')).
  pose proof (Rmax_l (norm2 (offset wc nbc) u) (norm2 (offset wr nbr) qr)).
  pose proof (Rmax_r (norm2 (offset wc nbc) u) (norm2 (offset wr nbr) qr)).
  nra.
Qed.

(** Counterexample: [min (||u||, ||qr||)] in place of the maximum is not a bound. One-dimensional:
    [W = 1], [qn = 2] (so [u = 2]), [qr = 0], [c = 1], [c' = 0], [kr = kr' = 0], [scale = 1]:
    the score error is [2], the would-be bound [min (2, 0) * (1 + 0) = 0]. *)
Lemma latent_plain_needs_max :
  let one := fun _ : nat => 1 in
  let two := fun _ : nat => 2 in
  let zero := fun _ : nat => 0 in
  let W := fun _ _ : nat => 1 in
  Rabs (latent_score 1 1 1 1 W two zero one zero - latent_score 1 1 1 1 W two zero zero zero)
    > 1 * Rmin (norm2 1 (eff_query 1 W two)) (norm2 1 zero)
      * (norm2 1 (vdiff one zero) + norm2 1 (vdiff zero zero)).
Proof.
  unfold latent_score, dot, matvec, eff_query, norm2, vdiff. simpl.
  replace (0 + 0 * 0) with 0 by ring. rewrite sqrt_0.
  assert (Hm : Rmin (sqrt (0 + (0 + 1 * 2) * (0 + 1 * 2))) 0 = 0).
  { apply Rmin_right. apply sqrt_pos. }
  rewrite Hm.
  replace (1 * (0 + 2 * (0 + 1 * 1) + 0) - 1 * (0 + 2 * (0 + 1 * 0) + 0)) with 2 by ring.
  rewrite Rabs_right; lra.
Qed.
