(** * The sampling corruption sentinel: miss probability and detection latency

    Each round draws [r] of [M] slots uniformly with replacement; [B] are corrupted. A round
    misses every corrupted slot with probability [q = (1 - B/M)^r], [n] rounds with [q^n], and
    detection with confidence [1 - delta] needs [n(delta) = ceil(ln delta / ln q)] rounds
    (paper section 2.4, Lemma 3; [python/witprobe/ledger/sentinel.py]; [Witprobe/Sentinel.lean]).

    Main results:
    - [miss_prob_eq]: over [r] i.i.d. uniform draws (the path expectation [expect] of [Ville.v]:
      [M^r] equally likely sequences), [P(all r draws miss) = (1 - B/M)^r] with [B] the number of corrupted slots; [rounds_miss_prob]: [n] rounds of [r]
      draws miss with probability [q^n].
    - [sentinel_rounds_iff]: for [0 < q < 1] and [delta > 0], [q^n <= delta <-> n >= ln delta / ln q];
      so the least such [n] is [ceil(ln delta / ln q)] ([detection_rounds] in Python), and
      [sentinel_rounds_minimal]: fewer rounds do not reach [1 - delta].
    - [sentinel_rounds_up]: [n = Z.to_nat (up (ln delta / ln q))] rounds suffice for
      [0 < delta < 1] ([up x] is the least integer [> x], at most one above the ceiling).
    - [sentinel_rounds_more]: more rounds never hurt.
    - [sentinel_detection]: the composed statement for [0 < B < M], [r >= 1].
    - [sentinel_r32_148] ... [sentinel_r256_19]: the paper's numbers at [M = 1024], [B = 1],
      [delta = 0.01]: 148, 74, 37 and 19 rounds for [r = 32, 64, 128, 256], each minimal.
    - Counterexample: [sentinel_needs_corruption] ([B = 0] gives [q = 1]: never detected). *)

From Coq Require Import Reals Lra Lia List ZArith.
From Interval Require Import Tactic.
From Witprobe Require Import Sum ExpLn Ville.
Import ListNotations.
Open Scope R_scope.

(** ** Miss probability of one round *)

(** [1] if no draw of [l] hits a corrupted slot, else [0]. *)
Definition all_miss (bad : nat -> bool) (l : list nat) : R :=
  if forallb (fun x => negb (bad x)) l then 1 else 0.

Definition ind_good (bad : nat -> bool) (x : nat) : R := if bad x then 0 else 1.

(** The number [B] of corrupted slots among [0..M-1]. *)
Definition corrupt_count (M : nat) (bad : nat -> bool) : R := sum M (fun x => if bad x then 1 else 0).

(** The uniform law on [{0..M-1}]. *)
Definition uniform (M : nat) : nat -> R := fun _ => / INR M.

(** [P(all r draws miss)]: the path expectation of [Ville.v] over [r] i.i.d. uniform draws
    ([M^r] sequences, each of probability [(1/M)^r]). *)
Definition miss_prob (M : nat) (bad : nat -> bool) (r : nat) : R :=
  expect M (uniform M) r [] (all_miss bad).

Lemma all_miss_cons (bad : nat -> bool) (x : nat) (l : list nat) :
  all_miss bad (x :: l) = ind_good bad x * all_miss bad l.
Proof. unfold all_miss, ind_good. simpl. destruct (bad x); simpl; ring. Qed.

(** For any one-step law [p]: [E[all r more draws miss | h] = (sum_x p x [x good])^r * [h all good]]. *)
Lemma expect_all_miss (M : nat) (p : nat -> R) (bad : nat -> bool) (r : nat) : forall h,
  expect M p r h (all_miss bad) = sum M (fun x => p x * ind_good bad x) ^ r * all_miss bad h.
Proof.
  induction r as [|r IH]; intros h; simpl expect; [simpl; ring|].
  rewrite (sum_ext M _ (fun x => (p x * ind_good bad x) * (sum M (fun x => p x * ind_good bad x) ^ r * all_miss bad h)))
    by (intros x _; rewrite IH, all_miss_cons; ring).
  rewrite sum_scal_r. simpl. ring.
Qed.

(** [sum_{x<M} [x good] = M - B]. *)
Lemma sum_ind_good (M : nat) (bad : nat -> bool) : sum M (ind_good bad) = INR M - corrupt_count M bad.
Proof.
  unfold corrupt_count. rewrite <- (Rmult_1_r (INR M)), <- sum_const, <- sum_minus.
  apply sum_ext. intros x _. unfold ind_good. destruct (bad x); ring.
Qed.

(** One round misses with probability [(1 - B/M)^r] (draws with replacement). *)
Theorem miss_prob_eq (M : nat) (bad : nat -> bool) (r : nat) :
  (0 < M)%nat -> miss_prob M bad r = (1 - corrupt_count M bad / INR M) ^ r.
Proof.
  intros HM. assert (0 < INR M) by (apply lt_0_INR, HM).
  unfold miss_prob. rewrite expect_all_miss. unfold all_miss, uniform. simpl.
  rewrite Rmult_1_r. f_equal.
  rewrite (sum_ext M _ (fun x => ind_good bad x * / INR M)) by (intros x _; ring).
  rewrite sum_scal_r, sum_ind_good. field. lra.
Qed.

(** [n] rounds of [r] draws are [r * n] draws: they miss with probability [q^n]. *)
Corollary rounds_miss_prob (M : nat) (bad : nat -> bool) (r n : nat) :
  (0 < M)%nat -> miss_prob M bad (r * n) = ((1 - corrupt_count M bad / INR M) ^ r) ^ n.
Proof. intros HM. rewrite miss_prob_eq by exact HM. apply pow_mult. Qed.

(** ** Detection latency *)

(** For [b < 0]: [a / b <= n <-> n * b <= a]. *)
Lemma div_neg_le_iff (a b n : R) : b < 0 -> (a / b <= n <-> n * b <= a).
Proof.
  intros Hb. set (r := a / b). assert (E : a = r * b) by (unfold r; field; lra).
  rewrite E. split; intros H; nra.
Qed.

(** Lemma 3: for [0 < q < 1] and [delta > 0], [q^n <= delta] iff [n >= ln delta / ln q]. *)
Theorem sentinel_rounds_iff (q delta : R) (n : nat) :
  0 < q < 1 -> 0 < delta -> (q ^ n <= delta <-> ln delta / ln q <= INR n).
Proof.
  intros [Hq0 Hq1] Hd. rewrite <- (ln_le_iff (q ^ n) delta (pow_lt q n Hq0) Hd), ln_pow by exact Hq0.
  rewrite div_neg_le_iff by (apply ln_neg; assumption). reflexivity.
Qed.

(** Sufficiency: any [n >= ln delta / ln q] reaches confidence [1 - delta]. *)
Corollary sentinel_rounds (q delta : R) (n : nat) :
  0 < q < 1 -> 0 < delta -> ln delta / ln q <= INR n -> q ^ n <= delta.
Proof. intros Hq Hd. apply sentinel_rounds_iff; assumption. Qed.

(** Minimality: with [n < ln delta / ln q] rounds the miss probability still exceeds [delta]. *)
Corollary sentinel_rounds_minimal (q delta : R) (n : nat) :
  0 < q < 1 -> 0 < delta -> INR n < ln delta / ln q -> delta < q ^ n.
Proof.
  intros Hq Hd Hn. destruct (Rle_dec (q ^ n) delta) as [H|H]; [|lra].
  apply (sentinel_rounds_iff q delta n Hq Hd) in H. lra.
Qed.

(** [up]-based round count: [Z.to_nat (up (ln delta / ln q))] rounds suffice, [0 < delta < 1]. *)
Definition up_rounds (q delta : R) : nat := Z.to_nat (up (ln delta / ln q)).

Lemma ratio_nonneg (q delta : R) : 0 < q < 1 -> 0 < delta < 1 -> 0 <= ln delta / ln q.
Proof.
  intros [Hq0 Hq1] [Hd0 Hd1].
  assert (ln delta < 0) by (apply ln_neg; assumption).
  assert (ln q < 0) by (apply ln_neg; assumption).
  assert (E : ln delta / ln q = (- ln delta) / (- ln q)) by (field; lra).
  rewrite E. left. apply Rdiv_lt_0_compat; lra.
Qed.

Theorem sentinel_rounds_up (q delta : R) :
  0 < q < 1 -> 0 < delta < 1 -> q ^ up_rounds q delta <= delta.
Proof.
  intros Hq Hd. apply sentinel_rounds; [exact Hq | apply Hd|].
  pose proof (ratio_nonneg q delta Hq Hd) as H0.
  destruct (archimed (ln delta / ln q)) as [Hup _].
  assert (Hz : (0 <= up (ln delta / ln q))%Z) by (apply le_IZR; lra).
  unfold up_rounds. rewrite INR_IZR_INZ, Z2Nat.id by exact Hz. lra.
Qed.

Lemma pow_le_one (q : R) (k : nat) : 0 <= q <= 1 -> q ^ k <= 1.
Proof.
  intros Hq. induction k as [|k IH]; simpl; [lra|].
  assert (0 <= q ^ k) by (apply pow_le; lra). nra.
Qed.

(** More rounds never hurt: [q^n <= delta -> q^(n+k) <= delta] for [0 <= q <= 1]. *)
Lemma sentinel_rounds_more (q delta : R) (n k : nat) :
  0 <= q <= 1 -> q ^ n <= delta -> q ^ (n + k) <= delta.
Proof.
  intros Hq H. rewrite pow_add.
  assert (0 <= q ^ n) by (apply pow_le; lra). pose proof (pow_le_one q k Hq). nra.
Qed.

(** The per-round miss probability is in [(0, 1)] when [0 < B < M] and [r >= 1]. *)
Lemma round_miss_in_01 (M : nat) (bad : nat -> bool) (r : nat) :
  (0 < M)%nat -> 0 < corrupt_count M bad < INR M -> (1 <= r)%nat ->
  0 < (1 - corrupt_count M bad / INR M) ^ r < 1.
Proof.
  intros HM [HB0 HBM] Hr. assert (0 < INR M) by (apply lt_0_INR, HM).
  assert (Hlt : corrupt_count M bad / INR M < 1).
  { apply (Rmult_lt_reg_r (INR M)); [lra|]. unfold Rdiv. rewrite Rmult_assoc, Rinv_l by lra. lra. }
  assert (Hpos : 0 < corrupt_count M bad / INR M) by (apply Rdiv_lt_0_compat; lra).
  split; [apply pow_lt; lra|]. apply pow_lt_1_compat; [lra | lia].
Qed.

(** Detection (Lemma 3, composed): with [0 < B < M] corrupted slots, [r >= 1] draws per round
    and [q = (1 - B/M)^r], [n] rounds all miss with probability at most [delta] iff
    [n >= ln delta / ln q]. *)
Theorem sentinel_detection (M : nat) (bad : nat -> bool) (r n : nat) (delta : R) :
  (0 < M)%nat -> 0 < corrupt_count M bad < INR M -> (1 <= r)%nat -> 0 < delta ->
  (miss_prob M bad (r * n) <= delta <->
   ln delta / ln ((1 - corrupt_count M bad / INR M) ^ r) <= INR n).
Proof.
  intros HM HB Hr Hd. rewrite rounds_miss_prob by exact HM.
  apply sentinel_rounds_iff; [apply round_miss_in_01; assumption | exact Hd].
Qed.

(** Counterexample beside [sentinel_detection]: with no corrupted slot ([B = 0], [q = 1]) every
    round count misses with probability [1 > delta] for [delta < 1]. *)
Lemma sentinel_needs_corruption (M r n : nat) (delta : R) :
  (0 < M)%nat -> delta < 1 -> delta < miss_prob M (fun _ => false) (r * n).
Proof.
  intros HM Hd. rewrite rounds_miss_prob by exact HM.
  unfold corrupt_count. rewrite sum_const, Rmult_0_r. unfold Rdiv. rewrite Rmult_0_l, Rminus_0_r, !pow1.
  exact Hd.
Qed.

(** ** The paper's worked numbers ([M = 1024], [B = 1], [delta = 0.01]) *)

(** [n] rounds suffice and [n - 1] do not, when [n - 1 < ln delta / ln q <= n]. *)
Lemma least_rounds (q delta : R) (n : nat) :
  0 < q < 1 -> 0 < delta -> (1 <= n)%nat -> INR n - 1 < ln delta / ln q <= INR n ->
  q ^ n <= delta /\ delta < q ^ (n - 1).
Proof.
  intros Hq Hd Hn [H1 H2]. split; [apply sentinel_rounds; assumption|].
  apply sentinel_rounds_minimal; [exact Hq | exact Hd|]. rewrite minus_INR by exact Hn. simpl. lra.
Qed.

Definition q1024 (r : nat) : R := (1 - 1 / 1024) ^ r.

(** [least_rounds] with the enclosure [n - 1 < ln delta / ln q <= n] decided by Interval. *)
Ltac worked_rounds n :=
  apply (least_rounds _ _ n); unfold q1024; [split; interval | lra | lia |];
  rewrite INR_IZR_INZ; simpl; split; interval.

(** [r = 32]: 148 rounds ([q ~ 0.9692]), and 147 do not suffice. *)
Lemma sentinel_r32_148 : q1024 32 ^ 148 <= 1 / 100 /\ 1 / 100 < q1024 32 ^ 147.
Proof. worked_rounds 148%nat. Qed.

(** [r = 64]: 74 rounds ([q ~ 0.9394]). *)
Lemma sentinel_r64_74 : q1024 64 ^ 74 <= 1 / 100 /\ 1 / 100 < q1024 64 ^ 73.
Proof. worked_rounds 74%nat. Qed.

(** [r = 128]: 37 rounds ([q ~ 0.8824]). *)
Lemma sentinel_r128_37 : q1024 128 ^ 37 <= 1 / 100 /\ 1 / 100 < q1024 128 ^ 36.
Proof. worked_rounds 37%nat. Qed.

(** [r = 256]: 19 rounds ([q ~ 0.7787]). *)
Lemma sentinel_r256_19 : q1024 256 ^ 19 <= 1 / 100 /\ 1 / 100 < q1024 256 ^ 18.
Proof. worked_rounds 19%nat. Qed.
