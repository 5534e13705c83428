(** * Per-claim lemmas for dense KV: from stored key residuals to the attention TV

    The claims of [Claims] composed with the banded score bridge of [ScoreBridge]: the
    hypothesis is stated on what the meter measures (band norms of the query and of the key
    residual [k_t - k'_t]), not on the scores. Scores are [scale * <q, k_t>], computed band by band
    ([bdot]; [ScoreBridge.bdot_flat] shows this is the flat dot product).

    Main results:
    - [centred_banded_claim]: if [scale * sum_b ||q_b|| ||k_{t,b} - k'_{t,b}|| <= C] for every
      key and [tanh (C/2) <= B], then [TV <= B];
    - [plain_banded_claim]: if [scale ||q|| <= Q], [sum_b ||k_{t,b} - k'_{t,b}|| <= W] for every key
      and [(e^{2QW} - 1)/2 <= B], then [TV <= B];
    - [eform_banded_claim]: if [E_{p'}[e^{c_t}] <= 1 + X] for the banded radii
      [c_t = scale * sum_b ||q_b|| ||k_{t,b} - k'_{t,b}||] and [X + X^2/2 <= B], then [TV <= B].

    The counterexample beside the bridge ([ScoreBridge.score_bridge_needs_scale_nonneg]) shows why
    [0 <= scale] is a hypothesis. *)

From Coq Require Import Reals Lra Lia.
From Witprobe Require Import Sum Softmax SoftmaxTV ScoreBridge Claims.
Open Scope R_scope.

Lemma banded_radius (nb : nat) (w : nat -> nat) (scale : R) (q : nat -> nat -> R)
  (k k' : nat -> nat -> nat -> R) (t : nat) :
  0 <= scale ->
  Rabs (scale * bdot nb w q (k t) - scale * bdot nb w q (k' t))
  <= scale * banded_witness nb w q (bdiff (k t) (k' t)).
Proof. intros Hs. apply score_bridge_banded. exact Hs. Qed.

Lemma centred_banded_claim (C B : R) :
  0 <= C -> tanh (C / 2) <= B ->
  forall (n nb : nat) (w : nat -> nat) (scale : R) (q : nat -> nat -> R) (k k' : nat -> nat -> nat -> R),
  0 <= scale ->
  (forall t, (t < n)%nat -> scale * banded_witness nb w q (bdiff (k t) (k' t)) <= C) ->
  tv n (softmax n (fun t => scale * bdot nb w q (k t)))
       (softmax n (fun t => scale * bdot nb w q (k' t))) <= B.
Proof.
  intros HC HB n nb w scale q k k' Hs Hw. apply (centred_claim C B HC HB n). intros t Ht.
  eapply Rle_trans; [apply banded_radius; exact Hs | apply Hw; exact Ht].
Qed.

Lemma norm2_nonneg (d : nat) (x : nat -> R) : 0 <= norm2 d x.
Proof. unfold norm2. apply sqrt_pos. Qed.

Lemma plain_banded_claim (Q W B : R) :
  0 <= Q -> 0 <= W -> / 2 * (exp (2 * (Q * W)) - 1) <= B ->
  forall (n nb : nat) (w : nat -> nat) (scale : R) (q : nat -> nat -> R) (k k' : nat -> nat -> nat -> R),
  0 <= scale ->
  scale * bnorm nb w q <= Q ->
  (forall t, (t < n)%nat -> sum nb (fun b => norm2 (w b) (bdiff (k t) (k' t) b)) <= W) ->
  tv n (softmax n (fun t => scale * bdot nb w q (k t)))
       (softmax n (fun t => scale * bdot nb w q (k' t))) <= B.
Proof.
  intros HQ HW HB n nb w scale q k k' Hs Hq Hw.
  apply (plain_claim (Q * W) B); [apply Rmult_le_pos; assumption | exact HB |]. intros t Ht.
  eapply Rle_trans; [apply score_bridge_plain; exact Hs|].
  assert (H0 : 0 <= sum nb (fun b => norm2 (w b) (bdiff (k t) (k' t) b)))
    by (apply sum_nonneg; intros b _; apply norm2_nonneg).
  assert (H1 : 0 <= scale * bnorm nb w q) by (apply Rmult_le_pos; [exact Hs | unfold bnorm; apply sqrt_pos]).
  specialize (Hw t Ht).
  replace (scale * (bnorm nb w q * sum nb (fun b => norm2 (w b) (bdiff (k t) (k' t) b))))
    with ((scale * bnorm nb w q) * sum nb (fun b => norm2 (w b) (bdiff (k t) (k' t) b))) by ring.
  apply Rmult_le_compat; assumption.
Qed.

Lemma eform_banded_claim (X B : R) :
  0 <= X -> X + X * X / 2 <= B ->
  forall (n nb : nat) (w : nat -> nat) (scale : R) (q : nat -> nat -> R) (k k' : nat -> nat -> nat -> R),
  (0 < n)%nat -> 0 <= scale ->
  emoment n (fun t => scale * bdot nb w q (k' t))
            (fun t => scale * banded_witness nb w q (bdiff (k t) (k' t))) <= 1 + X ->
  tv n (softmax n (fun t => scale * bdot nb w q (k t)))
       (softmax n (fun t => scale * bdot nb w q (k' t))) <= B.
Proof.
  intros HX HB n nb w scale q k k' Hn Hs HM.
  apply (eform_claim X B HX HB n (fun t => scale * bdot nb w q (k t)) (fun t => scale * bdot nb w q (k' t))
           (fun t => scale * banded_witness nb w q (bdiff (k t) (k' t))) Hn); [|exact HM].
  intros t _. apply banded_radius. exact Hs.
Qed.
