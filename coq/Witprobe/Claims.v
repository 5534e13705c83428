(** * Per-claim lemmas: the statements a run's theorems instantiate

    A run's claim on one layer has the form "for all score vectors within the run's measured
    radius, TV(exact softmax, served softmax) <= B". The per-run file proves it by applying one
    lemma below to the run's rational constants and closing the numeric side condition
    ([tanh (C/2) <= B], [(e^{2E} - 1)/2 <= B], or [X + X^2/2 <= B]) with [interval] or [lra].

    Main results (score level; [s] exact, [s'] served):
    - [centred_claim]: [0 <= C], [tanh (C/2) <= B], [|s_t - s'_t| <= C] for [t < n] give [TV <= B];
    - [plain_claim]: [0 <= E], [(e^{2E} - 1)/2 <= B], [|s_t - s'_t| <= E] give [TV <= B];
    - [eform_claim]: [0 <= X], [X + X^2/2 <= B], [|s_t - s'_t| <= c_t] and
      [E_{p'}[e^{c}] <= 1 + X] give [TV <= B];
    - [centred_sink_claim], [plain_sink_claim], [eform_sink_claim]: the same with a sink column.

    A run's theorem states none of these directly: it states the claim on what its memory class's
    meter measures, through that class's score bridge ([ClaimsBanded], [ClaimsSink],
    [ClaimsLatent]); these lemmas are the last step of those proofs.

    Sharpness [centred_claim_sharp]: two keys attain [tanh (C/2)], so the numeric side condition
    [tanh (C/2) <= B] cannot be weakened. *)

From Coq Require Import Reals Lra Lia.
From Witprobe Require Import Sum Softmax SoftmaxTV.
Open Scope R_scope.

Lemma centred_claim (C B : R) :
  0 <= C -> tanh (C / 2) <= B ->
  forall (n : nat) (s s' : nat -> R),
  (forall t, (t < n)%nat -> Rabs (s t - s' t) <= C) ->
  tv n (softmax n s) (softmax n s') <= B.
Proof.
  intros HC HB n s s' Hd. eapply Rle_trans; [apply (tv_le_tanh_radius n s s' C); assumption | exact HB].
Qed.

Lemma plain_claim (E B : R) :
  0 <= E -> / 2 * (exp (2 * E) - 1) <= B ->
  forall (n : nat) (s s' : nat -> R),
  (forall t, (t < n)%nat -> Rabs (s t - s' t) <= E) ->
  tv n (softmax n s) (softmax n s') <= B.
Proof.
  intros HE HB n s s' Hd. eapply Rle_trans; [apply (tv_le_plain n s s' E); assumption | exact HB].
Qed.

Lemma eform_claim (X B : R) :
  0 <= X -> X + X * X / 2 <= B ->
  forall (n : nat) (s s' c : nat -> R),
  (0 < n)%nat ->
  (forall t, (t < n)%nat -> Rabs (s t - s' t) <= c t) ->
  emoment n s' c <= 1 + X ->
  tv n (softmax n s) (softmax n s') <= B.
Proof.
  intros HX HB n s s' c Hn Hd HM. eapply Rle_trans; [apply (tv_le_eform n s s' c); assumption|].
  assert (Hpos : 0 <= emoment n s' c).
  { apply sum_nonneg. intros t _. pose proof (softmax_pos n s' t Hn). pose proof (exp_pos (c t)). nra. }
  assert (emoment n s' c * emoment n s' c <= (1 + X) * (1 + X)) by (apply Rmult_le_compat; lra).
  lra.
Qed.

Lemma centred_sink_claim (C B : R) :
  0 <= C -> tanh (C / 2) <= B ->
  forall (n : nat) (s s' : nat -> R) (sigma : R),
  (forall t, (t < n)%nat -> Rabs (s t - s' t) <= C) ->
  tv (S n) (softmax (S n) (extend s n sigma)) (softmax (S n) (extend s' n sigma)) <= B.
Proof.
  intros HC HB n s s' sigma Hd. eapply Rle_trans; [apply (tv_sink_le_tanh_radius n s s' sigma C); assumption | exact HB].
Qed.

Lemma plain_sink_claim (E B : R) :
  0 <= E -> / 2 * (exp (2 * E) - 1) <= B ->
  forall (n : nat) (s s' : nat -> R) (sigma : R),
  (forall t, (t < n)%nat -> Rabs (s t - s' t) <= E) ->
  tv (S n) (softmax (S n) (extend s n sigma)) (softmax (S n) (extend s' n sigma)) <= B.
Proof.
  intros HE HB n s s' sigma Hd.
  apply (plain_claim E B HE HB (S n)). apply (sink_radius n s s' (fun _ => E) sigma Hd HE).
Qed.

Lemma eform_sink_claim (X B : R) :
  0 <= X -> X + X * X / 2 <= B ->
  forall (n : nat) (s s' c : nat -> R) (sigma : R),
  (forall t, (t < n)%nat -> Rabs (s t - s' t) <= c t) -> 0 <= c n ->
  emoment (S n) (extend s' n sigma) c <= 1 + X ->
  tv (S n) (softmax (S n) (extend s n sigma)) (softmax (S n) (extend s' n sigma)) <= B.
Proof.
  intros HX HB n s s' c sigma Hd Hc HM.
  apply (eform_claim X B HX HB (S n) _ _ c); [lia | apply sink_radius; assumption | exact HM].
Qed.

(** Sharpness: for [C = 2], the scores [s = (1, -1)] and [s' = (-1, 1)] satisfy
    [|s_t - s'_t| <= 2] and have [TV = tanh 1 = tanh (C / 2)], so no bound below [tanh (C/2)] can
    be claimed for radius [C]: the numeric side condition [tanh (C/2) <= B] cannot be weakened. *)
Lemma centred_claim_sharp :
  tv 2 (softmax 2 (fun t => if Nat.eqb t 0 then 1 else - (1))) (softmax 2 (fun t => if Nat.eqb t 0 then - (1) else 1))
  = tanh 1.
Proof.
  unfold tv, softmax, partition, tanh. simpl.
  replace (2 * 1) with (1 + 1) by ring. rewrite exp_plus.
  set (e := exp 1). rewrite exp_Ropp. fold e.
  assert (He : e > 2) by (unfold e; pose proof (exp_ineq1 1); lra).
  assert (Hie : 0 < / e) by (apply Rinv_0_lt_compat; lra).
  replace (e / (0 + e + / e) - / e / (0 + / e + e)) with ((e * e - 1) / (e * e + 1)) by (field; nra).
  replace (/ e / (0 + e + / e) - e / (0 + / e + e)) with (- ((e * e - 1) / (e * e + 1))) by (field; nra).
  rewrite Rabs_Ropp.
  assert (Hpos : 0 <= (e * e - 1) / (e * e + 1)).
  { apply Rmult_le_pos; [nra|]. left. apply Rinv_0_lt_compat. nra. }
  rewrite Rabs_right by lra. field. nra.
Qed.
