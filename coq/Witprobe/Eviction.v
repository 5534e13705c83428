(** * Eviction: the attention mass of evicted keys, bounded from their stored band norms

    A KV cache that evicts entries (StreamingLLM sinks plus window, H2O, SnapKV) serves the
    softmax over the retained set [R] only, renormalized; the exact distribution is the softmax
    over every key. Sets are indicator functions [inR : nat -> bool] ([true]: retained).
    Definitions (scores [s], vectors of length [n], see [Sum]):
    - [zret n s inR = sum_{t in R} e^{s_t}], [zevict n s inR = sum_{t not in R} e^{s_t}];
    - [pruned n s inR t = e^{s_t} / zret] on [R], [0] off [R] (the served attention).

    Main results:
    - [pruned_is_restrict]: [pruned] is [Selection.restrict] of [softmax] to [R];
    - [tv_pruned_evicted_mass] (a): [TV(softmax s, pruned s) = Z_E / (Z_R + Z_E)], the evicted
      mass under the full softmax (from [Selection.tv_restrict]);
    - [evicted_ratio_mono] (b): [x / (Z_R + x)] is increasing, so [Z_E <= X] gives
      [Z_E / (Z_R + Z_E) <= X / (Z_R + X)];
    - [tv_pruned_le]: if [s_t <= U_t] for every evicted key then
      [TV <= X / (Z_R + X)] with [X = sum_{t not in R} e^{U_t}];
    - [evict_claim] (c, the per-run claim shape): [0 <= rho], [rho / (1 + rho) <= B],
      [s_t <= U_t] on the evicted keys and [sum_{not R} e^{U_t} <= rho * Z_R] give [TV <= B];
    - [evict_banded_claim]: the same with [s_t = scale <q, k_t>] computed band by band and
      [U_t = scale * sum_b ||q_b|| ||k_{t,b}||] (Cauchy-Schwarz per band, [ScoreBridge]): the
      hypothesis is on the retained keys' exact logits and the evicted keys' stored band norms;
    - [evict_side]: the numeric side condition [rho <= B (1 + rho)] of a per-run theorem.

    Counterexample [evict_needs_upper_logits]: if [U_t] under-estimates an evicted logit, the
    bound fails (two equal logits, one evicted, [U = s - 1]: [TV = 1/2 > 1/(e + 1)]). *)

From Coq Require Import Reals Lra Lia.
From Witprobe Require Import Sum Softmax ExpLn Selection ScoreBridge.
Open Scope R_scope.

Definition zret (n : nat) (s : nat -> R) (inR : nat -> bool) : R :=
  sum n (fun t => if inR t then exp (s t) else 0).

Definition zevict (n : nat) (s : nat -> R) (inR : nat -> bool) : R :=
  sum n (fun t => if inR t then 0 else exp (s t)).

Definition pruned (n : nat) (s : nat -> R) (inR : nat -> bool) : nat -> R :=
  fun t => if inR t then exp (s t) / zret n s inR else 0.

Lemma zret_nonneg (n : nat) (s : nat -> R) (inR : nat -> bool) : 0 <= zret n s inR.
Proof.
  apply sum_nonneg. intros t _. destruct (inR t); [left; apply exp_pos | lra].
Qed.

Lemma zevict_nonneg (n : nat) (s : nat -> R) (inR : nat -> bool) : 0 <= zevict n s inR.
Proof.
  apply sum_nonneg. intros t _. destruct (inR t); [lra | left; apply exp_pos].
Qed.

Lemma partition_split (n : nat) (s : nat -> R) (inR : nat -> bool) :
  partition n s = zret n s inR + zevict n s inR.
Proof.
  unfold partition, zret, zevict. rewrite <- sum_plus. apply sum_ext. intros t _.
  destruct (inR t); ring.
Qed.

Lemma zret_pos_n (n : nat) (s : nat -> R) (inR : nat -> bool) : 0 < zret n s inR -> (0 < n)%nat.
Proof. destruct n as [|m]; intros H; [unfold zret in H; simpl in H; lra | lia]. Qed.

Lemma mass_on_softmax (n : nat) (s : nat -> R) (inR : nat -> bool) :
  mass_on n (softmax n s) inR = zret n s inR / partition n s.
Proof.
  unfold mass_on, zret, softmax. rewrite <- sum_div_r. apply sum_ext. intros t _.
  destruct (inR t); unfold Rdiv; ring.
Qed.

Lemma mass_out_softmax (n : nat) (s : nat -> R) (inR : nat -> bool) :
  mass_out n (softmax n s) inR = zevict n s inR / partition n s.
Proof.
  unfold mass_out, zevict, softmax. rewrite <- sum_div_r. apply sum_ext. intros t _.
  destruct (inR t); unfold Rdiv; ring.
Qed.

(** The served (pruned) attention is the full softmax restricted to [R] and renormalized. *)
Lemma pruned_is_restrict (n : nat) (s : nat -> R) (inR : nat -> bool) (t : nat) :
  0 < zret n s inR -> restrict n (softmax n s) inR t = pruned n s inR t.
Proof.
  intros HR. pose proof (partition_pos n s (zret_pos_n n s inR HR)) as HZ.
  unfold restrict, pruned. rewrite mass_on_softmax. destruct (inR t); [|reflexivity].
  unfold softmax. field. split; lra.
Qed.

(** (a) [TV(softmax s, pruned s) = Z_E / (Z_R + Z_E)]: the evicted mass under the full softmax. *)
Theorem tv_pruned_evicted_mass (n : nat) (s : nat -> R) (inR : nat -> bool) :
  0 < zret n s inR ->
  tv n (softmax n s) (pruned n s inR) = zevict n s inR / (zret n s inR + zevict n s inR).
Proof.
  intros HR. pose proof (zret_pos_n n s inR HR) as Hn.
  pose proof (partition_pos n s Hn) as HZ.
  assert (Htv : tv n (softmax n s) (pruned n s inR) = tv n (softmax n s) (restrict n (softmax n s) inR)).
  { unfold tv. f_equal. apply sum_ext. intros t _. rewrite pruned_is_restrict by exact HR. reflexivity. }
  rewrite Htv, tv_restrict.
  - rewrite mass_out_softmax, (partition_split n s inR). reflexivity.
  - intros t _. left. apply softmax_pos, Hn.
  - apply softmax_sum, Hn.
  - rewrite mass_on_softmax. apply Rdiv_lt_0_compat; assumption.
Qed.

(** (b) [x / (Z_R + x)] is increasing in [x >= 0]. *)
Lemma evicted_ratio_mono (zr ze x : R) :
  0 < zr -> 0 <= ze -> ze <= x -> ze / (zr + ze) <= x / (zr + x).
Proof.
  intros Hr He Hx.
  assert (E : x / (zr + x) - ze / (zr + ze) = zr * (x - ze) / ((zr + x) * (zr + ze))) by (field; lra).
  assert (0 <= zr * (x - ze) / ((zr + x) * (zr + ze))).
  { apply Rmult_le_pos; [apply Rmult_le_pos; lra|]. left. apply Rinv_0_lt_compat. nra. }
  lra.
Qed.

(** An upper bound on every evicted logit bounds the evicted mass of the exact scores. *)
Lemma zevict_le (n : nat) (s U : nat -> R) (inR : nat -> bool) :
  (forall t, (t < n)%nat -> inR t = false -> s t <= U t) -> zevict n s inR <= zevict n U inR.
Proof.
  intros H. apply sum_le. intros t Ht. destruct (inR t) eqn:E; [lra|].
  apply exp_le_mono. apply H; assumption.
Qed.

(** [s_t <= U_t] on the evicted keys gives [TV <= X / (Z_R + X)], [X = sum_{not R} e^{U_t}]. *)
Theorem tv_pruned_le (n : nat) (s U : nat -> R) (inR : nat -> bool) :
  0 < zret n s inR -> (forall t, (t < n)%nat -> inR t = false -> s t <= U t) ->
  tv n (softmax n s) (pruned n s inR) <= zevict n U inR / (zret n s inR + zevict n U inR).
Proof.
  intros HR HU. rewrite tv_pruned_evicted_mass by exact HR.
  apply evicted_ratio_mono; [exact HR | apply zevict_nonneg | apply zevict_le, HU].
Qed.

(** (c) The per-run claim shape: one constant [rho] (the layer maximum over read rows of
    [sum_{not R} e^{U_t} / Z_R]), one bound [B >= rho / (1 + rho)]. No hypothesis that [R] is
    nonempty is needed: with [Z_R = 0] the ratio hypothesis forces [n = 0]. *)
Theorem evict_claim (rho B : R) :
  0 <= rho -> rho / (1 + rho) <= B ->
  forall (n : nat) (s U : nat -> R) (inR : nat -> bool),
  (forall t, (t < n)%nat -> inR t = false -> s t <= U t) ->
  zevict n U inR <= rho * zret n s inR ->
  tv n (softmax n s) (pruned n s inR) <= B.
Proof.
  intros Hrho HB n s U inR HU HX.
  assert (HB0 : 0 <= B).
  { eapply Rle_trans; [|exact HB]. apply Rmult_le_pos; [lra|]. left. apply Rinv_0_lt_compat. lra. }
  destruct (Rle_lt_or_eq_dec 0 (zret n s inR) (zret_nonneg n s inR)) as [HR|HR].
  - eapply Rle_trans; [apply (tv_pruned_le n s U inR HR HU)|].
    eapply Rle_trans; [apply (evicted_ratio_mono (zret n s inR) (zevict n U inR) (rho * zret n s inR));
                       [exact HR | apply zevict_nonneg | exact HX]|].
    apply Rle_trans with (rho / (1 + rho)); [right; field; split; nra | exact HB].
  - destruct n as [|m].
    + rewrite tv_empty. exact HB0.
    + exfalso. pose proof (partition_pos (S m) s ltac:(lia)) as HZ.
      rewrite (partition_split (S m) s inR) in HZ.
      pose proof (zevict_le (S m) s U inR HU). rewrite <- HR in HX. lra.
Qed.

(** Evicted logits are bounded above by their stored band norms: [scale <q, k> <= scale * sum_b
    ||q_b|| ||k_b||] (Cauchy-Schwarz per band). *)
Lemma banded_logit_le (nb : nat) (w : nat -> nat) (scale : R) (q kt : nat -> nat -> R) :
  0 <= scale -> scale * bdot nb w q kt <= scale * banded_witness nb w q kt.
Proof.
  intros Hs. apply Rmult_le_compat_l; [exact Hs|].
  eapply Rle_trans; [apply Rle_abs | apply bdot_le_banded_witness].
Qed.

(** The dense-KV claim: retained keys' logits exact, evicted keys seen only through their band
    norms. *)
Theorem evict_banded_claim (rho B : R) :
  0 <= rho -> rho / (1 + rho) <= B ->
  forall (n nb : nat) (w : nat -> nat) (scale : R) (q : nat -> nat -> R) (k : nat -> nat -> nat -> R)
         (inR : nat -> bool),
  0 <= scale ->
  zevict n (fun t => scale * banded_witness nb w q (k t)) inR
    <= rho * zret n (fun t => scale * bdot nb w q (k t)) inR ->
  tv n (softmax n (fun t => scale * bdot nb w q (k t)))
       (pruned n (fun t => scale * bdot nb w q (k t)) inR) <= B.
Proof.
  intros Hrho HB n nb w scale q k inR Hs HX.
  apply (evict_claim rho B Hrho HB n _ (fun t => scale * banded_witness nb w q (k t)) inR); [|exact HX].
  intros t _ _. apply banded_logit_le, Hs.
Qed.

(** The numeric side condition of a per-run theorem in a form [lra] closes on rational constants:
    [rho <= B (1 + rho)] gives [rho / (1 + rho) <= B]. *)
Lemma evict_side (rho B : R) : 0 <= rho -> rho <= B * (1 + rho) -> rho / (1 + rho) <= B.
Proof.
  intros Hr Hb. apply Rmult_le_reg_r with (1 + rho); [lra|].
  replace (rho / (1 + rho) * (1 + rho)) with rho by (field; lra). lra.
Qed.

(** Counterexample: the bound needs [s_t <= U_t]. Two keys with logit [0], key [1] evicted, and
    [U_1 = -1] under-estimating it: the ratio hypothesis holds with [rho = e^{-1}] but
    [TV = 1/2 > e^{-1} / (1 + e^{-1})]. *)
Lemma evict_needs_upper_logits :
  let s := fun _ : nat => 0 in
  let inR := fun t : nat => Nat.eqb t 0 in
  let U := fun _ : nat => -1 in
  zevict 2 U inR <= exp (-1) * zret 2 s inR
  /\ tv 2 (softmax 2 s) (pruned 2 s inR) > exp (-1) / (1 + exp (-1)).
Proof.
  intros s inR U.
  assert (HR : zret 2 s inR = 1) by (unfold zret, s, inR; simpl; rewrite exp_0; ring).
  assert (HE : zevict 2 s inR = 1) by (unfold zevict, s, inR; simpl; rewrite exp_0; ring).
  assert (HU : zevict 2 U inR = exp (-1)) by (unfold zevict, U, inR; simpl; ring).
  split.
  - rewrite HR, HU. lra.
  - rewrite tv_pruned_evicted_mass by lra. rewrite HR, HE.
    assert (Hlt : exp (-1) < 1) by (rewrite <- exp_0; apply exp_increasing; lra).
    pose proof (exp_pos (-1)).
    apply Rminus_gt_0_lt. 
    replace (1 / (1 + 1) - exp (-1) / (1 + exp (-1))) with ((1 - exp (-1)) / (2 * (1 + exp (-1)))) by (field; lra).
    apply Rdiv_lt_0_compat; lra.
Qed.
