(** * Per-claim lemmas for reads with an attention sink (DeepSeek-V4): from stored key residuals

    A DeepSeek-V4 read attends over [n] keys (the sliding window and the compressed entries, one
    tensor serving as key and value) plus one sink column whose logit [sigma] is a learned
    per-head parameter: the same number in the exact and the served distribution
    (python/witprobe/probe/observer.py [with_sinks]: its score error and its band witness are 0).
    The V4 meter (python/witprobe/probe/v4.py [read_scores]) witnesses every key as dense KV does:
    band norms of the query and of the key residual [k_t - k'_t], so the per-key radius is
    [c_t = scale * sum_b ||q_b|| ||k_{t,b} - k'_{t,b}||] ([ClaimsBanded]) and the sink's is 0.

    The claims of [Claims] with a sink column composed with the banded score bridge of
    [ScoreBridge]: the hypotheses are on what the meter measures, not on the scores.

    Main results (scores [scale * <q, k_t>], computed band by band, then the sink logit at [n]):
    - [centred_sink_banded_claim]: if [c_t <= C] for every key and [tanh (C/2) <= B], then
      [TV <= B] over the keys and the sink;
    - [plain_sink_banded_claim]: if [scale ||q|| <= Q], [sum_b ||k_{t,b} - k'_{t,b}|| <= W] for
      every key and [(e^{2QW} - 1)/2 <= B], then [TV <= B];
    - [eform_sink_banded_claim]: if [E_{p'}[e^{c}] <= 1 + X] over the keys and the sink (the sink's
      radius [0]) and [X + X^2/2 <= B], then [TV <= B].

    Counterexample [sink_logit_must_match]: with no key residual at all, a sink logit that moves
    between the two distributions already gives [TV > 1/4]: the sink's logit is one shared
    binder of the statements, not something the witness covers. ([ScoreBridge]'s
    [score_bridge_needs_scale_nonneg] shows why [0 <= scale] is a hypothesis.) *)

From Coq Require Import Reals Lra Lia.
From Witprobe Require Import Sum Softmax SoftmaxTV ScoreBridge Claims ClaimsBanded.
Open Scope R_scope.

(** The plain per-key bound: [scale ||q|| <= Q] and [sum_b ||k_{t,b} - k'_{t,b}|| <= W] give
    [|s_t - s'_t| <= Q * W]. *)
Lemma banded_plain_radius (Q W : R) (nb : nat) (w : nat -> nat) (scale : R) (q : nat -> nat -> R)
  (k k' : nat -> nat -> nat -> R) (t : nat) :
  0 <= Q -> 0 <= scale -> scale * bnorm nb w q <= Q ->
  sum nb (fun b => norm2 (w b) (bdiff (k t) (k' t) b)) <= W ->
  Rabs (scale * bdot nb w q (k t) - scale * bdot nb w q (k' t)) <= Q * W.
Proof.
  intros HQ Hs Hq Hw.
  eapply Rle_trans; [apply score_bridge_plain; exact Hs|].
  assert (H0 : 0 <= sum nb (fun b => norm2 (w b) (bdiff (k t) (k' t) b)))
    by (apply sum_nonneg; intros b _; apply norm2_nonneg).
  replace (scale * (bnorm nb w q * sum nb (fun b => norm2 (w b) (bdiff (k t) (k' t) b))))
    with ((scale * bnorm nb w q) * sum nb (fun b => norm2 (w b) (bdiff (k t) (k' t) b))) by ring.
  apply Rmult_le_compat; [| exact H0 | exact Hq | exact Hw].
  apply Rmult_le_pos; [exact Hs | unfold bnorm; apply sqrt_pos].
Qed.

Lemma centred_sink_banded_claim (C B : R) :
  0 <= C -> tanh (C / 2) <= B ->
  forall (n nb : nat) (w : nat -> nat) (scale : R) (q : nat -> nat -> R) (k k' : nat -> nat -> nat -> R)
         (sigma : R),
  0 <= scale ->
  (forall t, (t < n)%nat -> scale * banded_witness nb w q (bdiff (k t) (k' t)) <= C) ->
  tv (S n) (softmax (S n) (extend (fun t => scale * bdot nb w q (k t)) n sigma))
           (softmax (S n) (extend (fun t => scale * bdot nb w q (k' t)) n sigma)) <= B.
Proof.
  intros HC HB n nb w scale q k k' sigma Hs Hw. apply (centred_sink_claim C B HC HB n). intros t Ht.
  eapply Rle_trans; [apply banded_radius; exact Hs | apply Hw; exact Ht].
Qed.

Lemma plain_sink_banded_claim (Q W B : R) :
  0 <= Q -> 0 <= W -> / 2 * (exp (2 * (Q * W)) - 1) <= B ->
  forall (n nb : nat) (w : nat -> nat) (scale : R) (q : nat -> nat -> R) (k k' : nat -> nat -> nat -> R)
         (sigma : R),
  0 <= scale ->
  scale * bnorm nb w q <= Q ->
  (forall t, (t < n)%nat -> sum nb (fun b => norm2 (w b) (bdiff (k t) (k' t) b)) <= W) ->
  tv (S n) (softmax (S n) (extend (fun t => scale * bdot nb w q (k t)) n sigma))
           (softmax (S n) (extend (fun t => scale * bdot nb w q (k' t)) n sigma)) <= B.
Proof.
  intros HQ HW HB n nb w scale q k k' sigma Hs Hq Hw.
  apply (plain_sink_claim (Q * W) B); [apply Rmult_le_pos; assumption | exact HB |]. intros t Ht.
  apply banded_plain_radius; [exact HQ | exact Hs | exact Hq | apply Hw; exact Ht].
Qed.

Lemma eform_sink_banded_claim (X B : R) :
  0 <= X -> X + X * X / 2 <= B ->
  forall (n nb : nat) (w : nat -> nat) (scale : R) (q : nat -> nat -> R) (k k' : nat -> nat -> nat -> R)
         (sigma : R),
  0 <= scale ->
  emoment (S n) (extend (fun t => scale * bdot nb w q (k' t)) n sigma)
                (extend (fun t => scale * banded_witness nb w q (bdiff (k t) (k' t))) n 0) <= 1 + X ->
  tv (S n) (softmax (S n) (extend (fun t => scale * bdot nb w q (k t)) n sigma))
           (softmax (S n) (extend (fun t => scale * bdot nb w q (k' t)) n sigma)) <= B.
Proof.
  intros HX HB n nb w scale q k k' sigma Hs HM.
  apply (eform_sink_claim X B HX HB n _ _ (extend (fun t => scale * banded_witness nb w q (bdiff (k t) (k' t))) n 0));
    [| | exact HM].
  - intros t Ht. unfold extend. destruct (Nat.eqb_spec t n) as [-> | _]; [lia|].
    apply banded_radius. exact Hs.
  - unfold extend. rewrite Nat.eqb_refl. lra.
Qed.

(** Counterexample: one key with no residual (score [0] on both sides) and a sink logit [2] in
    the exact distribution but [0] in the served one: [TV = (e^2 - 1) / (2 (e^2 + 1)) > 1/4].
    No bound on the key residuals covers a sink logit that moves. *)
Lemma sink_logit_must_match :
  tv 2 (softmax 2 (extend (fun _ => 0) 1 2)) (softmax 2 (extend (fun _ => 0) 1 0)) > / 4.
Proof.
  unfold tv, softmax, partition, extend. simpl. rewrite exp_0.
  assert (H2 : exp 2 > 3).
  { pose proof (exp_ineq1 2). lra. }
  replace (1 / (0 + 1 + exp 2) - 1 / (0 + 1 + 1)) with (- ((exp 2 - 1) / (2 * (exp 2 + 1))))
    by (field; lra).
  replace (exp 2 / (0 + 1 + exp 2) - 1 / (0 + 1 + 1)) with ((exp 2 - 1) / (2 * (exp 2 + 1)))
    by (field; lra).
  rewrite Rabs_Ropp. rewrite Rabs_right.
  - apply Rmult_gt_reg_l with (2 * (exp 2 + 1)) ; [lra|].
    replace (2 * (exp 2 + 1) * (/ 2 * (0 + (exp 2 - 1) / (2 * (exp 2 + 1)) + (exp 2 - 1) / (2 * (exp 2 + 1)))))
      with (exp 2 - 1) by (field; lra). lra.
  - apply Rle_ge. apply Rmult_le_pos; [lra|]. left. apply Rinv_0_lt_compat. lra.
Qed.
