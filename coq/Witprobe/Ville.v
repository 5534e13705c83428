(** * Ville's inequality on a finite sample space, at every finite horizon

    One step draws an outcome [x] in [{0..K-1}] with probability [p x]; the draws are i.i.d.
    A history is the list of past outcomes, newest first, and a process [M] assigns a real to
    every history (so it may depend on the whole past). Mirrors [Witprobe/Ville.lean] over the
    reals instead of cross-multiplied naturals.

    - [expect K p T h f = sum_{x1<K} p x1 ... sum_{xT<K} p xT * f (xT :: ... :: x1 :: h)]: the
      expectation over the [K^T] paths of [T] more draws, each weighted by its probability.
    - [runmax M T h'] is [max_{k <= T} M (skipn k h')]: the running maximum of [M] along the
      last [T] draws of the path [h'] (start included).
    - [hit K p M c T h]: the probability of crossing [c] within [T] more steps, by recursion
      that stops at the first crossing (the stopping argument).

    Main results:
    - [hit_expect]: for [sum p = 1], [hit T h = P(max_{k<=T} M_k >= c | h)], the path form.
    - [ville_hit]: for [p >= 0], [M >= 0], [E[M(x :: h)] <= M h] and [c > 0]:
      [hit T h <= M h / c].
    - [ville]: [P(max_{k<=T} M_k >= 1/delta) <= delta * M_0], for every horizon [T].
    - [eprocess_ville]: a product of factors [g >= 0] with conditional mean [<= 1], started at
      1, crosses [1/delta] within [T] steps with probability [<= delta], for every [T].
    - [eprocess_log_alarm]: the ledger's form ([python/witprobe/ledger/eprocess.py]): with
      [log M_t = sum log g] and [E[exp(log g) | past] <= 1],
      [P(max_{t<=T} log M_t >= ln(1/delta)) <= delta].
    - [eprocess_log_factor]: [lambda (W - m) - lambda^2 C/8 = 4 kappa z - 2 kappa^2] with
      [lambda = 4 kappa/sqrt C], [z = (W - m)/sqrt C] ([2 z - 1/2] at [kappa = 1/2]);
      [eprocess_threshold_001]: [ln 100] lies in [(4.6051, 4.6052)] (Interval).
    - Counterexample: [eprocess_needs_mean_le_one] (factor 4, mean 4 > 1: crossing
      probability 1 > delta = 1/2).

    Scope: finite horizon [T] (every [T], hence anytime over any finite horizon); no limit
    [T -> infinity] is taken; the draws are i.i.d. from one law [p]. The factor mean bound
    [E[g | past] <= 1] (McDiarmid) is a hypothesis here, not proved. *)

From Coq Require Import Reals Lra Lia List.
From Interval Require Import Tactic.
From Witprobe Require Import Sum ExpLn.
Import ListNotations.
Open Scope R_scope.

(** ** Paths and their expectation *)

(** [E[f(path)]] over [T] more i.i.d. draws from [p] on [{0..K-1}], starting at history [h]. *)
Fixpoint expect (K : nat) (p : nat -> R) (T : nat) (h : list nat) (f : list nat -> R) : R :=
  match T with
  | O => f h
  | S T' => sum K (fun x => p x * expect K p T' (x :: h) f)
  end.

(** Only the values of [f] on paths [l ++ h] with [|l| = T] matter. *)
Lemma expect_ext (K : nat) (p : nat -> R) (T : nat) : forall h f g,
  (forall l, length l = T -> f (l ++ h) = g (l ++ h)) -> expect K p T h f = expect K p T h g.
Proof.
  induction T as [|T IH]; intros h f g H; simpl.
  - apply (H []). reflexivity.
  - apply sum_ext. intros x _. f_equal. apply IH. intros l Hl.
    replace (l ++ x :: h) with ((l ++ [x]) ++ h) by (rewrite <- app_assoc; reflexivity).
    apply H. rewrite app_length, Hl. simpl. lia.
Qed.

(** The expectation of a constant is that constant when [sum p = 1]. *)
Lemma expect_const (K : nat) (p : nat -> R) (a : R) :
  sum K p = 1 -> forall T h, expect K p T h (fun _ => a) = a.
Proof.
  intros Hp. induction T as [|T IH]; intros h; simpl; [reflexivity|].
  rewrite (sum_ext K _ (fun x => p x * a)) by (intros x _; rewrite IH; reflexivity).
  rewrite sum_scal_r, Hp. ring.
Qed.

(** The running maximum [max_{k <= T} M (skipn k h')]. *)
Fixpoint runmax (M : list nat -> R) (T : nat) (h' : list nat) : R :=
  match T with
  | O => M h'
  | S T' => Rmax (M h') (runmax M T' (tl h'))
  end.

Lemma skipn_S_tl {A : Type} (n : nat) (l : list A) : skipn (S n) l = skipn n (tl l).
Proof. destruct l; simpl; [destruct n|]; reflexivity. Qed.

Lemma skipn_app_length {A : Type} (l h : list A) : skipn (length l) (l ++ h) = h.
Proof. induction l as [|a l IH]; simpl; [reflexivity | exact IH]. Qed.

(** Peeling the oldest history off the running maximum. *)
Lemma runmax_S_last (M : list nat -> R) (T : nat) : forall h',
  runmax M (S T) h' = Rmax (runmax M T h') (M (skipn (S T) h')).
Proof.
  induction T as [|T IH]; intros h'.
  - destruct h'; reflexivity.
  - change (runmax M (S (S T)) h') with (Rmax (M h') (runmax M (S T) (tl h'))).
    rewrite IH, Rmax_assoc, (skipn_S_tl (S T) h'). reflexivity.
Qed.

(** The indicator of [c <= y]. *)
Definition above (c y : R) : R := if Rle_dec c y then 1 else 0.

(** [P(max_{k<=T} M_k >= c | h)]: the probability that the process reaches [c] within [T]
    more draws. *)
Definition cross_prob (K : nat) (p : nat -> R) (M : list nat -> R) (c : R) (T : nat) (h : list nat) : R :=
  expect K p T h (fun h' => above c (runmax M T h')).

(** ** The stopped recursion *)

(** Probability of crossing [c] within [T] more steps: 1 once crossed, otherwise one more draw. *)
Fixpoint hit (K : nat) (p : nat -> R) (M : list nat -> R) (c : R) (T : nat) (h : list nat) : R :=
  if Rle_dec c (M h) then 1 else
  match T with
  | O => 0
  | S T' => sum K (fun x => p x * hit K p M c T' (x :: h))
  end.

(** Below [c] at the oldest history, the running maximum crosses iff the rest does. *)
Lemma above_Rmax_below (c a b : R) : b < c -> above c (Rmax a b) = above c a.
Proof.
  intros Hb. unfold above. apply Rmax_case_strong; intros H;
    destruct (Rle_dec c a), (Rle_dec c b); try reflexivity; lra.
Qed.

Lemma above_Rmax_crossed (c a b : R) : c <= b -> above c (Rmax a b) = 1.
Proof.
  intros Hb. unfold above. destruct (Rle_dec c (Rmax a b)) as [|H]; [reflexivity|].
  exfalso. apply H. eapply Rle_trans; [exact Hb | apply Rmax_r].
Qed.

(** The stopped recursion computes the path probability:
    [hit T h = P(max_{k<=T} M_k >= c | h)] when [sum p = 1]. *)
Theorem hit_expect (K : nat) (p : nat -> R) (M : list nat -> R) (c : R) :
  sum K p = 1 -> forall T h, hit K p M c T h = cross_prob K p M c T h.
Proof.
  intros Hp. unfold cross_prob. induction T as [|T IH]; intros h.
  - simpl. unfold above. reflexivity.
  - simpl hit. destruct (Rle_dec c (M h)) as [Hc|Hc].
    + rewrite (expect_ext K p (S T) h _ (fun _ => 1)); [symmetry; apply expect_const, Hp|].
      intros l Hl. cbv beta. rewrite runmax_S_last, <- Hl, skipn_app_length.
      apply above_Rmax_crossed, Hc.
    + cbn [expect]. apply sum_ext. intros x _. f_equal. rewrite IH.
      apply expect_ext. intros l Hl. cbv beta. symmetry. rewrite runmax_S_last.
      replace (l ++ x :: h) with ((l ++ [x]) ++ h) by (rewrite <- app_assoc; reflexivity).
      replace (S T) with (length (l ++ [x])) by (rewrite app_length, Hl; simpl; lia).
      rewrite skipn_app_length. apply above_Rmax_below. lra.
Qed.

(** ** Ville's inequality *)

Lemma one_le_div (a c : R) : 0 < c -> c <= a -> 1 <= a / c.
Proof.
  intros Hc Ha. apply (Rmult_le_reg_r c); [exact Hc|]. unfold Rdiv.
  rewrite Rmult_assoc, Rinv_l by lra. lra.
Qed.

(** Ville's inequality, stopped form: for [p >= 0], a nonnegative supermartingale
    ([sum_x p x * M (x :: h) <= M h]) and [c > 0], [hit T h <= M h / c]. *)
Theorem ville_hit (K : nat) (p : nat -> R) (M : list nat -> R) (c : R) :
  (forall x, (x < K)%nat -> 0 <= p x) -> (forall h, 0 <= M h) ->
  (forall h, sum K (fun x => p x * M (x :: h)) <= M h) -> 0 < c ->
  forall T h, hit K p M c T h <= M h / c.
Proof.
  intros Hp HM Hsup Hc. induction T as [|T IH]; intros h; simpl;
    (destruct (Rle_dec c (M h)) as [Hx|Hx]; [apply one_le_div; assumption|]).
  - unfold Rdiv. apply Rmult_le_pos; [apply HM | left; apply Rinv_0_lt_compat, Hc].
  - apply (Rle_trans _ (sum K (fun x => p x * M (x :: h)) / c)).
    + rewrite <- sum_div_r. apply sum_le. intros x Hxk. unfold Rdiv.
      rewrite Rmult_assoc. apply Rmult_le_compat_l; [apply Hp, Hxk | apply IH].
    + unfold Rdiv. apply Rmult_le_compat_r; [left; apply Rinv_0_lt_compat, Hc | apply Hsup].
Qed.

(** Ville's inequality on paths: [P(max_{k<=T} M_k >= 1/delta) <= delta * M_0] for every
    horizon [T], for a nonnegative supermartingale under a probability [p] ([p >= 0],
    [sum p = 1]) and [delta > 0]. *)
Theorem ville (K : nat) (p : nat -> R) (M : list nat -> R) (delta : R) :
  (forall x, (x < K)%nat -> 0 <= p x) -> sum K p = 1 -> (forall h, 0 <= M h) ->
  (forall h, sum K (fun x => p x * M (x :: h)) <= M h) -> 0 < delta ->
  forall T, cross_prob K p M (/ delta) T [] <= delta * M [].
Proof.
  intros Hp Hp1 HM Hsup Hd T. rewrite <- hit_expect by exact Hp1.
  eapply Rle_trans; [apply ville_hit; try assumption; apply Rinv_0_lt_compat, Hd|].
  unfold Rdiv. rewrite Rinv_inv. lra.
Qed.

(** ** The e-process *)

(** The product process: [M [] = 1], [M (x :: h) = M h * g h x]. *)
Fixpoint prod_process (g : list nat -> nat -> R) (h : list nat) : R :=
  match h with
  | [] => 1
  | x :: h => prod_process g h * g h x
  end.

Lemma prod_process_nonneg (g : list nat -> nat -> R) :
  (forall h x, 0 <= g h x) -> forall h, 0 <= prod_process g h.
Proof.
  intros Hg. induction h as [|x h IH]; simpl; [lra|]. apply Rmult_le_pos; [exact IH | apply Hg].
Qed.

(** Factors with conditional mean at most 1 make the product a supermartingale. *)
Lemma prod_process_supermartingale (K : nat) (p : nat -> R) (g : list nat -> nat -> R) :
  (forall h x, 0 <= g h x) -> (forall h, sum K (fun x => p x * g h x) <= 1) ->
  forall h, sum K (fun x => p x * prod_process g (x :: h)) <= prod_process g h.
Proof.
  intros Hg Hmean h. simpl.
  rewrite (sum_ext K _ (fun x => prod_process g h * (p x * g h x))) by (intros x _; ring).
  rewrite sum_scal_l. pose proof (prod_process_nonneg g Hg h).
  rewrite <- (Rmult_1_r (prod_process g h)) at 2. apply Rmult_le_compat_l; [assumption | apply Hmean].
Qed.

(** The e-process corollary: factors [g >= 0] with [sum_x p x * g h x <= 1] for every past [h];
    then [P(max_{t<=T} prod_{s<=t} g >= 1/delta) <= delta] for every [T]. *)
Theorem eprocess_ville (K : nat) (p : nat -> R) (g : list nat -> nat -> R) (delta : R) :
  (forall x, (x < K)%nat -> 0 <= p x) -> sum K p = 1 ->
  (forall h x, 0 <= g h x) -> (forall h, sum K (fun x => p x * g h x) <= 1) -> 0 < delta ->
  forall T, cross_prob K p (prod_process g) (/ delta) T [] <= delta.
Proof.
  intros Hp Hp1 Hg Hmean Hd T.
  pose proof (ville K p (prod_process g) delta Hp Hp1 (prod_process_nonneg g Hg)
    (prod_process_supermartingale K p g Hg Hmean) Hd T) as H.
  simpl in H. lra.
Qed.

(** The log process of the ledger: [log M [] = 0], [log M (x :: h) = log M h + lg h x]. *)
Fixpoint log_process (lg : list nat -> nat -> R) (h : list nat) : R :=
  match h with
  | [] => 0
  | x :: h => log_process lg h + lg h x
  end.

Lemma exp_log_process (lg : list nat -> nat -> R) (h : list nat) :
  exp (log_process lg h) = prod_process (fun h x => exp (lg h x)) h.
Proof. induction h as [|x h IH]; simpl; [apply exp_0 | rewrite exp_plus, IH; reflexivity]. Qed.

Lemma runmax_ext (M1 M2 : list nat -> R) (T : nat) :
  (forall h, M1 h = M2 h) -> forall h', runmax M1 T h' = runmax M2 T h'.
Proof.
  intros H. induction T as [|T IH]; intros h'; simpl; [apply H | rewrite H, IH; reflexivity].
Qed.

Lemma runmax_exp (L : list nat -> R) (T : nat) : forall h',
  runmax (fun h => exp (L h)) T h' = exp (runmax L T h').
Proof.
  induction T as [|T IH]; intros h'; simpl; [reflexivity|]. rewrite IH, exp_Rmax. reflexivity.
Qed.

(** [1/delta <= e^r] iff [ln(1/delta) <= r]. *)
Lemma above_exp (delta r : R) : 0 < delta -> above (/ delta) (exp r) = above (ln (/ delta)) r.
Proof.
  intros Hd. unfold above.
  assert (Hiff : / delta <= exp r <-> ln (/ delta) <= r).
  { rewrite (exp_le_iff (ln (/ delta)) r), exp_ln by (apply Rinv_0_lt_compat, Hd). reflexivity. }
  destruct (Rle_dec (/ delta) (exp r)), (Rle_dec (ln (/ delta)) r); try reflexivity; tauto.
Qed.

(** The ledger's alarm ([eprocess.py]): log-factors [lg] with [E[exp(lg) | past] <= 1]; the
    alarm [max_{t<=T} log M_t >= ln(1/delta)] fires with probability at most [delta], for
    every [T]. *)
Theorem eprocess_log_alarm (K : nat) (p : nat -> R) (lg : list nat -> nat -> R) (delta : R) :
  (forall x, (x < K)%nat -> 0 <= p x) -> sum K p = 1 ->
  (forall h, sum K (fun x => p x * exp (lg h x)) <= 1) -> 0 < delta ->
  forall T, cross_prob K p (log_process lg) (ln (/ delta)) T [] <= delta.
Proof.
  intros Hp Hp1 Hmean Hd T.
  assert (E : cross_prob K p (log_process lg) (ln (/ delta)) T []
            = cross_prob K p (prod_process (fun h x => exp (lg h x))) (/ delta) T []).
  { unfold cross_prob. apply expect_ext. intros l _.
    rewrite (runmax_ext (prod_process (fun h x => exp (lg h x))) (fun h => exp (log_process lg h)))
      by (intros h; symmetry; apply exp_log_process).
    rewrite runmax_exp, above_exp by exact Hd. reflexivity. }
  rewrite E. apply eprocess_ville; try assumption. intros h x. left. apply exp_pos.
Qed.

(** The factor of [eprocess.py]: with [lambda = 4 kappa / sqrt C] and [z = (W - m)/sqrt C],
    [lambda (W - m) - lambda^2 C / 8 = 4 kappa z - 2 kappa^2] for [C > 0]. *)
Lemma eprocess_log_factor (kappa W m C : R) : 0 < C ->
  let lambda := 4 * kappa / sqrt C in
  lambda * (W - m) - lambda ^ 2 * C / 8 = 4 * kappa * ((W - m) / sqrt C) - 2 * kappa ^ 2.
Proof.
  intros HC lambda. unfold lambda. pose proof (sqrt_lt_R0 C HC).
  assert (Hs : sqrt C ^ 2 = C) by (apply pow2_sqrt; lra).
  set (s := sqrt C) in *. rewrite <- Hs. field. lra.
Qed.

(** At [kappa = 1/2] the log-factor is [2 z - 1/2]. *)
Corollary eprocess_log_factor_half (W m C : R) : 0 < C ->
  let lambda := 4 * (1 / 2) / sqrt C in
  lambda * (W - m) - lambda ^ 2 * C / 8 = 2 * ((W - m) / sqrt C) - 1 / 2.
Proof.
  intros HC. pose proof (eprocess_log_factor (1 / 2) W m C HC) as H.
  cbv zeta in H |- *. rewrite H. set (z := (W - m) / sqrt C). field.
Qed.

(** The alarm threshold of [eprocess.py] at [delta_e = 0.01]: [ln(1/delta_e) = ln 100 = 4.60517...]. *)
Lemma eprocess_threshold_001 : 4.6051 < ln (/ (1 / 100)) < 4.6052.
Proof. split; interval. Qed.

(** Counterexample beside [eprocess_ville]: two equally likely outcomes and the constant factor
    4 (conditional mean 4 > 1): with [delta = 1/2] the process crosses [1/delta = 2] in one step
    with probability [1 > delta]. *)
Lemma eprocess_needs_mean_le_one :
  let p := fun _ : nat => 1 / 2 in
  cross_prob 2 p (prod_process (fun _ _ => 4)) (/ (1 / 2)) 1 [] = 1 /\ 1 > 1 / 2.
Proof.
  split; [|lra]. unfold cross_prob, above. simpl.
  rewrite Rmax_left by lra.
  destruct (Rle_dec (/ (1 / 2)) (1 * 4)) as [|H]; [lra|].
  exfalso. apply H. rewrite Rinv_div. lra.
Qed.
