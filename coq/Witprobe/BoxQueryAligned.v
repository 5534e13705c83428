(** * The box bound over query-aligned radii

    The box theorem [BoxSup.tv_le_box] needs per-key radii [r_t >= |s_t - s'_t|]. The banded
    score bridge gives one radius ([box_banded_claim]); the query-aligned bridge
    ([QueryAligned.qa_score_bridge]) gives another from a per-key decomposition
    [k_t - k'_t = U a_t + rr_t] and any vector [b]:
    [r_t = scale * qa_radius d rk U q a_t rr_t b]. Either is sound, so the meter may take for each
    key the smaller of the two ([min(c_band, c_qa)] in [witprobe.probe.meters]).

    Main results, with flat scores [s_t = scale <q, k_t>] of width [d = offset w nb]:
    - [box_qa_claim]: query-aligned radii and a [box_certificate] at level [B] give [TV <= B];
    - [box_qa_or_banded_claim]: the same when each key's radius covers its query-aligned radius
      or its banded radius (of the band split of [q] and [k_t - k'_t]).

    Counterexample [box_qa_needs_decomposition]: the decomposition hypothesis cannot be dropped.
    With no basis ([rk = 0]) and a remainder claimed to be [0], every query-aligned radius is [0]
    and the centred certificate at level [0] holds, yet two keys whose exact scores differ have
    [TV > 0]. *)

From Coq Require Import Reals Lra Lia FunctionalExtensionality.
From Witprobe Require Import Sum Softmax SoftmaxTV ScoreBridge LatentBridge QueryAligned BoxSup.
Open Scope R_scope.

(** The per-run claim shape with query-aligned radii. *)
Theorem box_qa_claim (B : R) :
  forall (n d rk : nat) (U : nat -> nat -> R) (scale : R) (q b : nat -> R) (k k' a rr : nat -> nat -> R)
         (r : nat -> R),
  (0 < n)%nat -> 0 <= scale ->
  (forall t, (t < n)%nat -> forall i, (i < d)%nat -> k t i - k' t i = matvec rk U (a t) i + rr t i) ->
  (forall t, (t < n)%nat -> scale * qa_radius d rk U q (a t) (rr t) b <= r t) ->
  box_certificate n (softmax n (fun t => scale * dot d q (k' t))) r B ->
  tv n (softmax n (fun t => scale * dot d q (k t))) (softmax n (fun t => scale * dot d q (k' t))) <= B.
Proof.
  intros n d rk U scale q b k k' a rr r Hn Hs Hdec Hr Hc.
  apply (tv_le_box n _ _ r B Hn); [| exact Hc].
  intros t Ht. cbv beta.
  eapply Rle_trans; [apply qa_score_bridge; [exact Hs | apply Hdec; exact Ht] | apply Hr; exact Ht].
Qed.

(** The banded radius of flat vectors, through their band split. *)
Lemma flat_score_bridge_banded (nb : nat) (w : nat -> nat) (scale : R) (q kt kt' : nat -> R) :
  0 <= scale ->
  Rabs (scale * dot (offset w nb) q kt - scale * dot (offset w nb) q kt')
    <= scale * banded_witness nb w (band_split w q) (bdiff (band_split w kt) (band_split w kt')).
Proof.
  intros Hs. rewrite <- !bdot_flat. apply score_bridge_banded. exact Hs.
Qed.

(** Each key's radius covers its query-aligned or its banded radius: the meter's [min]. *)
Theorem box_qa_or_banded_claim (B : R) :
  forall (n nb rk : nat) (w : nat -> nat) (U : nat -> nat -> R) (scale : R) (q b : nat -> R)
         (k k' a rr : nat -> nat -> R) (r : nat -> R),
  (0 < n)%nat -> 0 <= scale ->
  (forall t, (t < n)%nat -> forall i, (i < offset w nb)%nat ->
     k t i - k' t i = matvec rk U (a t) i + rr t i) ->
  (forall t, (t < n)%nat ->
     scale * qa_radius (offset w nb) rk U q (a t) (rr t) b <= r t
     \/ scale * banded_witness nb w (band_split w q) (bdiff (band_split w (k t)) (band_split w (k' t))) <= r t) ->
  box_certificate n (softmax n (fun t => scale * dot (offset w nb) q (k' t))) r B ->
  tv n (softmax n (fun t => scale * dot (offset w nb) q (k t)))
       (softmax n (fun t => scale * dot (offset w nb) q (k' t))) <= B.
Proof.
  intros n nb rk w U scale q b k k' a rr r Hn Hs Hdec Hr Hc.
  apply (tv_le_box n _ _ r B Hn); [| exact Hc].
  intros t Ht. cbv beta. destruct (Hr t Ht) as [Hq | Hb].
  - eapply Rle_trans; [apply qa_score_bridge; [exact Hs | apply Hdec; exact Ht] | exact Hq].
  - eapply Rle_trans; [apply flat_score_bridge_banded; exact Hs | exact Hb].
Qed.

(** ** Counterexample: the decomposition cannot be dropped *)

(** Two keys of width 1, [q = 1], exact keys [1, 0], served keys [0, 0], no basis ([rk = 0]) and a
    remainder claimed to be [0]: every query-aligned radius is [0] and the centred certificate at
    level [0] holds ([tanh 0 = 0]), yet [TV > 0]. *)
Lemma box_qa_needs_decomposition :
  let q := fun _ : nat => 1 in
  let k := fun (t : nat) (_ : nat) => if Nat.eqb t 0 then 1 else 0 in
  let k' := fun (_ _ : nat) => 0 in
  let zero := fun (_ _ : nat) => 0 in
  let U := fun (_ _ : nat) => 0 in
  let b := fun _ : nat => 0 in
  let r := fun _ : nat => 0 in
  (forall t, (t < 2)%nat -> 1 * qa_radius 1 0 U q (zero t) (zero t) b <= r t)
  /\ box_certificate 2 (softmax 2 (fun t => 1 * dot 1 q (k' t))) r 0
  /\ 0 < tv 2 (softmax 2 (fun t => 1 * dot 1 q (k t))) (softmax 2 (fun t => 1 * dot 1 q (k' t))).
Proof.
  intros q k k' zero U b r.
  pose proof box_needs_lower_cover as Hbox. cbv zeta in Hbox. destruct Hbox as (_ & _ & _ & Htv).
  assert (Hk : (fun t => 1 * dot 1 q (k t)) = (fun t : nat => if Nat.eqb t 0 then 1 else 0)).
  { apply functional_extensionality. intros t. unfold dot, q, k. simpl. destruct (Nat.eqb t 0); ring. }
  assert (Hk' : (fun t => 1 * dot 1 q (k' t)) = (fun _ : nat => 0)).
  { apply functional_extensionality. intros t. unfold dot, q, k'. simpl. ring. }
  split; [| split].
  - intros t _. unfold qa_radius, r, zero, b.
    rewrite (norm2_zero 1 (fun _ : nat => 0)) by (intros; reflexivity).
    replace (dot 0 (eff_query 1 U q) (fun _ : nat => 0)) with 0 by (unfold dot; reflexivity).
    replace (norm2 0 (fun _ : nat => 0)) with 0 by (unfold norm2; simpl; symmetry; apply sqrt_0).
    rewrite Rabs_R0. lra.
  - right. exists 0. split.
    + intros t _. unfold r. lra.
    + replace (0 / 2) with 0 by field. unfold tanh. rewrite Rmult_0_r, exp_0.
      replace ((1 - 1) / (1 + 1)) with 0 by field. lra.
  - rewrite Hk, Hk'. exact Htv.
Qed.
