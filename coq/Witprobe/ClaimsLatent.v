(** * Per-claim lemmas for latent (MLA) caches: from stored latent residuals to the attention TV

    The claims of [Claims] composed with the latent score bridge of [LatentBridge]. A key [t] is
    stored as a latent vector [c_t] (expanded by [W_UK]) and a RoPE key [kr_t]; the score is
    [scale * (<qn, W c_t> + <qr, kr_t>)] ([latent_score]). The hypothesis is stated on what the
    latent meter measures: [latent_witness], i.e.
    [c_t = scale * (sum_b ||u_b|| ||c_{t,b} - c'_{t,b}|| + sum_b ||qr_b|| ||kr_{t,b} - kr'_{t,b}||)]
    with the effective query [u = W^T qn].

    Main results:
    - [centred_latent_claim]: [c_t <= C] for every key and [tanh (C/2) <= B] give [TV <= B];
    - [plain_latent_claim]: the meter's plain form, on what it measures: the query gain
      [scale * max (||u||, ||qr||) <= Q] ([lqnorm]), the per-key band sums of the latent and RoPE
      residuals [sum_b ||c_{t,b} - c'_{t,b}|| + sum_b ||kr_{t,b} - kr'_{t,b}|| <= W] ([lwidth]) and
      [(e^{2QW} - 1)/2 <= B] give [TV <= B] (bridge: [LatentBridge.latent_score_bridge_plain]);
    - [eform_latent_claim]: [E_{p'}[e^{c_t}] <= 1 + X] and [X + X^2/2 <= B] give [TV <= B];
    - [box_latent_claim]: radii [r_t >= c_t] and a [BoxSup.box_certificate] at level [B] for the
      served distribution and [r] give [TV <= B] (the box form on a latent layer).

    [LatentBridge.latent_bridge_needs_effective_query] is the counterexample that shows why the
    bridge goes through [u] and not [||qn||]; [LatentBridge.latent_plain_needs_max] why the plain
    form's gain is the maximum of [||u||] and [||qr||] (not the minimum). *)

From Coq Require Import Reals Lra Lia.
From Witprobe Require Import Sum Softmax SoftmaxTV ScoreBridge LatentBridge Claims BoxSup.
Open Scope R_scope.

Section Latent.
Variables (dn nbc nbr : nat) (wc wr : nat -> nat) (scale : R) (W : nat -> nat -> R) (qn qr : nat -> R).

(** Scores of the keys [(c t, kr t)]. *)
Definition lscores (c kr : nat -> nat -> R) : nat -> R :=
  fun t => latent_score dn (offset wc nbc) (offset wr nbr) scale W qn qr (c t) (kr t).

(** The meter's per-key radius. *)
Definition lradius (c c' kr kr' : nat -> nat -> R) : nat -> R :=
  fun t => latent_witness nbc wc nbr wr scale (eff_query dn W qn) qr (vdiff (c t) (c' t)) (vdiff (kr t) (kr' t)).

Lemma latent_radius (c c' kr kr' : nat -> nat -> R) (t : nat) :
  0 <= scale -> Rabs (lscores c kr t - lscores c' kr' t) <= lradius c c' kr kr' t.
Proof. intros Hs. apply latent_score_bridge_banded. exact Hs. Qed.

End Latent.

Lemma centred_latent_claim (C B : R) :
  0 <= C -> tanh (C / 2) <= B ->
  forall (n dn nbc nbr : nat) (wc wr : nat -> nat) (scale : R) (W : nat -> nat -> R) (qn qr : nat -> R)
         (c c' kr kr' : nat -> nat -> R),
  0 <= scale ->
  (forall t, (t < n)%nat -> lradius dn nbc nbr wc wr scale W qn qr c c' kr kr' t <= C) ->
  tv n (softmax n (lscores dn nbc nbr wc wr scale W qn qr c kr))
       (softmax n (lscores dn nbc nbr wc wr scale W qn qr c' kr')) <= B.
Proof.
  intros HC HB n dn nbc nbr wc wr scale W qn qr c c' kr kr' Hs Hw.
  apply (centred_claim C B HC HB n). intros t Ht.
  eapply Rle_trans; [apply latent_radius; exact Hs | apply Hw; exact Ht].
Qed.

(** The plain form's query gain [max (||u||, ||qr||)], [u = W^T qn] (the meter's [q_coef / scale]:
    the largest query-band norm over the two components). *)
Definition lqnorm (dn nbc nbr : nat) (wc wr : nat -> nat) (W : nat -> nat -> R) (qn qr : nat -> R) : R :=
  Rmax (norm2 (offset wc nbc) (eff_query dn W qn)) (norm2 (offset wr nbr) qr).

(** The plain form's per-key witness: the band norms of the latent residual plus those of the
    RoPE-key residual (the meter's [w] of key [t]). *)
Definition lwidth (nbc nbr : nat) (wc wr : nat -> nat) (c c' kr kr' : nat -> nat -> R) (t : nat) : R :=
  sum nbc (fun b => norm2 (wc b) (band_split wc (vdiff (c t) (c' t)) b))
  + sum nbr (fun b => norm2 (wr b) (band_split wr (vdiff (kr t) (kr' t)) b)).

Lemma plain_latent_claim (Q Wt B : R) :
  0 <= Q -> 0 <= Wt -> / 2 * (exp (2 * (Q * Wt)) - 1) <= B ->
  forall (n dn nbc nbr : nat) (wc wr : nat -> nat) (scale : R) (W : nat -> nat -> R) (qn qr : nat -> R)
         (c c' kr kr' : nat -> nat -> R),
  0 <= scale ->
  scale * lqnorm dn nbc nbr wc wr W qn qr <= Q ->
  (forall t, (t < n)%nat -> lwidth nbc nbr wc wr c c' kr kr' t <= Wt) ->
  tv n (softmax n (lscores dn nbc nbr wc wr scale W qn qr c kr))
       (softmax n (lscores dn nbc nbr wc wr scale W qn qr c' kr')) <= B.
Proof.
  intros HQ HW HB n dn nbc nbr wc wr scale W qn qr c c' kr kr' Hs Hq Hw.
  apply (plain_claim (Q * Wt) B); [apply Rmult_le_pos; assumption | exact HB |]. intros t Ht.
  unfold lscores.
  eapply Rle_trans; [apply latent_score_bridge_plain; exact Hs|].
  specialize (Hw t Ht). unfold lwidth in Hw. unfold lqnorm in Hq.
  assert (H0 : 0 <= sum nbc (fun b => norm2 (wc b) (band_split wc (vdiff (c t) (c' t)) b))
                  + sum nbr (fun b => norm2 (wr b) (band_split wr (vdiff (kr t) (kr' t)) b))).
  { pose proof (band_norm_sum_nonneg nbc wc (vdiff (c t) (c' t))).
    pose proof (band_norm_sum_nonneg nbr wr (vdiff (kr t) (kr' t))). lra. }
  apply Rmult_le_compat; [| exact H0 | exact Hq | exact Hw].
  apply Rmult_le_pos; [exact Hs|]. eapply Rle_trans; [apply norm2_nonneg | apply Rmax_l].
Qed.

Lemma eform_latent_claim (X B : R) :
  0 <= X -> X + X * X / 2 <= B ->
  forall (n dn nbc nbr : nat) (wc wr : nat -> nat) (scale : R) (W : nat -> nat -> R) (qn qr : nat -> R)
         (c c' kr kr' : nat -> nat -> R),
  (0 < n)%nat -> 0 <= scale ->
  emoment n (lscores dn nbc nbr wc wr scale W qn qr c' kr') (lradius dn nbc nbr wc wr scale W qn qr c c' kr kr')
    <= 1 + X ->
  tv n (softmax n (lscores dn nbc nbr wc wr scale W qn qr c kr))
       (softmax n (lscores dn nbc nbr wc wr scale W qn qr c' kr')) <= B.
Proof.
  intros HX HB n dn nbc nbr wc wr scale W qn qr c c' kr kr' Hn Hs HM.
  apply (eform_claim X B HX HB n _ _ (lradius dn nbc nbr wc wr scale W qn qr c c' kr kr') Hn); [|exact HM].
  intros t _. apply latent_radius. exact Hs.
Qed.

Lemma box_latent_claim (B : R) :
  forall (n dn nbc nbr : nat) (wc wr : nat -> nat) (scale : R) (W : nat -> nat -> R) (qn qr : nat -> R)
         (c c' kr kr' : nat -> nat -> R) (r : nat -> R),
  (0 < n)%nat -> 0 <= scale ->
  (forall t, (t < n)%nat -> lradius dn nbc nbr wc wr scale W qn qr c c' kr kr' t <= r t) ->
  box_certificate n (softmax n (lscores dn nbc nbr wc wr scale W qn qr c' kr')) r B ->
  tv n (softmax n (lscores dn nbc nbr wc wr scale W qn qr c kr))
       (softmax n (lscores dn nbc nbr wc wr scale W qn qr c' kr')) <= B.
Proof.
  intros n dn nbc nbr wc wr scale W qn qr c c' kr kr' r Hn Hs Hr Hc.
  apply (tv_le_box n _ _ r B Hn); [| exact Hc].
  intros t Ht. eapply Rle_trans; [apply latent_radius; exact Hs | apply Hr; exact Ht].
Qed.
