(** * Request budgets: telescoping shares, the two-layer counter, the union bound

    Probabilistic certificates of one request draw the failure probability
    [delta_i = delta / ((i+1)(i+2))], [i = 0, 1, 2, ...] (paper section 5.1;
    [python/witprobe/ledger/budget.py], [Witprobe/Budget.lean]).

    Main results:
    - [telescope_sum]: for every [n], [sum_{i<n} delta/((i+1)(i+2)) = delta * n/(n+1)].
    - [telescope_sum_le], [telescope_sum_lt]: the spend is [<= delta] for [delta >= 0] and
      [< delta] for [delta > 0], at every length [n] (no length known in advance).
      Counterexample: [flat_budget_exceeds] (a fixed share [delta/N] overspends at length [N+1]).
    - [two_layer_spend_eq], [two_layer_budget_lt]: deterministic events cost 0 and do not advance
      the counter; the spend of any event list is [delta * m/(m+1)], [m] its probabilistic events.
      Worked example: [two_layer_example] ([[true; false; true]] spends [2/3 delta]).
    - [union_bound]: on a finite sample space [{0..K-1}] with weights [w >= 0],
      [P(E_0 \/ ... \/ E_{n-1}) <= sum_{i<n} P(E_i)].
      Counterexample: [union_bound_needs_nonneg_weights].
    - [ledger_sound]: if [P(E_i) <= delta/((i+1)(i+2))] for every [i < n], then
      [P(some E_i) <= delta * n/(n+1) <= delta]. *)

From Coq Require Import Reals Lra Lia List.
From Witprobe Require Import Sum.
Import ListNotations.
Open Scope R_scope.

(** ** Telescoping shares *)

(** The share of the [i]-th probabilistic event: [delta/((i+1)(i+2))]. *)
Definition share (delta : R) (i : nat) : R := delta / ((INR i + 1) * (INR i + 2)).

(** The closed form [delta * n/(n+1)]. *)
Definition spent (delta : R) (n : nat) : R := delta * INR n / (INR n + 1).

Lemma INR_plus1_pos (n : nat) : 0 < INR n + 1.
Proof. pose proof (pos_INR n). lra. Qed.

(** One telescoping step: [delta n/(n+1) + delta/((n+1)(n+2)) = delta (n+1)/(n+2)]. *)
Lemma spent_S (delta : R) (n : nat) : spent delta n + share delta n = spent delta (S n).
Proof.
  unfold spent, share. rewrite S_INR. pose proof (INR_plus1_pos n). field. lra.
Qed.

(** Telescoping sum: [sum_{i<n} delta/((i+1)(i+2)) = delta * n/(n+1)]. *)
Theorem telescope_sum (delta : R) (n : nat) : sum n (share delta) = spent delta n.
Proof.
  induction n as [|n IH]; simpl sum.
  - unfold spent. simpl. field.
  - rewrite IH. apply spent_S.
Qed.

(** Each share is positive when [delta > 0]: every event gets some budget. *)
Lemma share_pos (delta : R) (i : nat) : 0 < delta -> 0 < share delta i.
Proof.
  intros H. unfold share. pose proof (INR_plus1_pos i).
  apply Rdiv_lt_0_compat; [exact H | apply Rmult_lt_0_compat; lra].
Qed.

(** [n/(n+1) <= 1]. *)
Lemma spent_le (delta : R) (n : nat) : 0 <= delta -> spent delta n <= delta.
Proof.
  intros H. unfold spent. pose proof (INR_plus1_pos n).
  apply (Rmult_le_reg_r (INR n + 1)); [lra|]. unfold Rdiv.
  rewrite Rmult_assoc, Rinv_l by lra. nra.
Qed.

Lemma spent_lt (delta : R) (n : nat) : 0 < delta -> spent delta n < delta.
Proof.
  intros H. unfold spent. pose proof (INR_plus1_pos n).
  apply (Rmult_lt_reg_r (INR n + 1)); [lra|]. unfold Rdiv.
  rewrite Rmult_assoc, Rinv_l by lra. nra.
Qed.

(** The spend never exceeds the budget: [sum_{i<n} delta_i <= delta] for [delta >= 0]. *)
Theorem telescope_sum_le (delta : R) (n : nat) : 0 <= delta -> sum n (share delta) <= delta.
Proof. intros H. rewrite telescope_sum. apply spent_le, H. Qed.

(** ... and stays strictly below it for [delta > 0]. *)
Theorem telescope_sum_lt (delta : R) (n : nat) : 0 < delta -> sum n (share delta) < delta.
Proof. intros H. rewrite telescope_sum. apply spent_lt, H. Qed.

(** Counterexample beside the rule: a flat share [delta/N] for an assumed length [N >= 1]
    overspends once the request has [N + 1] events: [(N+1) * delta/N > delta]. *)
Lemma flat_budget_exceeds (delta : R) (N : nat) :
  0 < delta -> (1 <= N)%nat -> delta < sum (S N) (fun _ => delta / INR N).
Proof.
  intros H HN. rewrite sum_const, S_INR.
  assert (1 <= INR N) by (apply (le_INR 1); exact HN).
  replace ((INR N + 1) * (delta / INR N)) with (delta + delta / INR N) by (field; lra).
  assert (0 < delta / INR N) by (apply Rdiv_lt_0_compat; lra). lra.
Qed.

(** ** The two-layer budget *)

(** Spend of an event list ([true] = probabilistic) when [k] probabilistic events came before:
    a deterministic event costs 0 and leaves the counter. *)
Fixpoint two_layer_spend (delta : R) (k : nat) (es : list bool) : R :=
  match es with
  | [] => 0
  | true :: es => share delta k + two_layer_spend delta (S k) es
  | false :: es => two_layer_spend delta k es
  end.

Fixpoint prob_count (es : list bool) : nat :=
  match es with
  | [] => O
  | true :: es => S (prob_count es)
  | false :: es => prob_count es
  end.

(** [two_layer_spend delta k es = sum_{k <= i < k + m} delta_i] with [m] the probabilistic
    events of [es]. *)
Lemma two_layer_spend_sum (delta : R) (es : list bool) : forall k,
  two_layer_spend delta k es = sum (k + prob_count es) (share delta) - sum k (share delta).
Proof.
  induction es as [|[|] es IH]; intros k; simpl.
  - rewrite Nat.add_0_r. ring.
  - rewrite IH. replace (k + S (prob_count es))%nat with (S k + prob_count es)%nat by lia.
    simpl sum at 2. ring.
  - apply IH.
Qed.

(** The two-layer budget: the spend of any event list, deterministic events included, is
    [delta * m/(m+1)] with [m] the number of its probabilistic events. *)
Theorem two_layer_spend_eq (delta : R) (es : list bool) :
  two_layer_spend delta 0 es = spent delta (prob_count es).
Proof. rewrite two_layer_spend_sum, telescope_sum. simpl. ring. Qed.

Corollary two_layer_budget_lt (delta : R) (es : list bool) :
  0 < delta -> two_layer_spend delta 0 es < delta.
Proof. intros H. rewrite two_layer_spend_eq. apply spent_lt, H. Qed.

(** Worked example (Python [two_layer_spend]): [[true; false; true]] spends
    [delta/2 + delta/6 = 2/3 delta]; a counter that also advanced on the deterministic event
    would charge the second probabilistic event [delta/12] instead of [delta/6]. *)
Lemma two_layer_example (delta : R) : two_layer_spend delta 0 [true; false; true] = 2 / 3 * delta.
Proof. unfold two_layer_spend, share. simpl. field. Qed.

(** ** The union bound on a finite weighted sample space *)

(** [P(E) = sum_{k<K} [E k] w k] on the outcomes [0..K-1] with weights [w]. *)
Definition prob (K : nat) (w : nat -> R) (E : nat -> bool) : R :=
  sum K (fun k => if E k then w k else 0).

(** The union of the events [E 0, ..., E (n-1)]. *)
Fixpoint union (n : nat) (E : nat -> nat -> bool) (k : nat) : bool :=
  match n with
  | O => false
  | S m => (union m E k || E m k)%bool
  end.

Lemma prob_or_le (K : nat) (w : nat -> R) (A B : nat -> bool) :
  (forall k, (k < K)%nat -> 0 <= w k) ->
  prob K w (fun k => (A k || B k)%bool) <= prob K w A + prob K w B.
Proof.
  intros Hw. unfold prob. rewrite <- sum_plus. apply sum_le. intros k Hk.
  specialize (Hw k Hk). destruct (A k), (B k); simpl; lra.
Qed.

(** Union bound: [P(E_0 \/ ... \/ E_{n-1}) <= sum_{i<n} P(E_i)] for weights [w >= 0]. *)
Theorem union_bound (K : nat) (w : nat -> R) (E : nat -> nat -> bool) (n : nat) :
  (forall k, (k < K)%nat -> 0 <= w k) ->
  prob K w (union n E) <= sum n (fun i => prob K w (E i)).
Proof.
  intros Hw. induction n as [|n IH]; simpl sum.
  - unfold prob at 1; simpl. rewrite sum_const. lra.
  - eapply Rle_trans; [apply (prob_or_le K w (union n E) (E n) Hw)|]. lra.
Qed.

(** Counterexample beside the union bound: with a negative weight it fails. Weights
    [w 0 = 1], [w 1 = -1]; [E_0 = {0, 1}] has mass 0, [E_1 = {1}] has mass -1, their union has
    mass [0 > -1]. *)
Lemma union_bound_needs_nonneg_weights :
  let w := fun k : nat => if Nat.eqb k 0 then 1 else -1 in
  let E := fun i k : nat => if Nat.eqb i 0 then true else Nat.eqb k 1 in
  prob 2 w (union 2 E) > sum 2 (fun i => prob 2 w (E i)).
Proof. unfold prob. simpl. lra. Qed.

(** The ledger: if [P(E_i) <= delta/((i+1)(i+2))] for every [i < n], then
    [P(some E_i) <= delta * n/(n+1) <= delta], for every [n]. *)
Theorem ledger_sound (K : nat) (w : nat -> R) (E : nat -> nat -> bool) (delta : R) (n : nat) :
  (forall k, (k < K)%nat -> 0 <= w k) -> 0 <= delta ->
  (forall i, (i < n)%nat -> prob K w (E i) <= share delta i) ->
  prob K w (union n E) <= spent delta n /\ spent delta n <= delta.
Proof.
  intros Hw Hd HE. split; [|apply spent_le, Hd].
  rewrite <- telescope_sum. eapply Rle_trans; [apply union_bound, Hw|]. apply sum_le, HE.
Qed.
