(** * Softmax bridges: from a bound on score errors to a bound on total variation

    Throughout, [s] are the exact scores, [s'] the served ones, [p = softmax s],
    [p' = softmax s'], and [d_t = s_t - s'_t].

    Main results:
    - [tv_ratio]: [TV(p, p') = (1 / 2Z) * sum_t p'_t |e^{d_t} - Z|] with [Z = sum_t p'_t e^{d_t}];
    - [tv_le_tanh_osc] (centred form): if [lo <= d_t <= hi] for every [t], then
      [TV(p, p') <= tanh ((hi - lo) / 4)], i.e. [tanh (osc / 4)]; sharp (two keys);
    - [tv_le_tanh_radius]: if [|d_t| <= C] then [TV <= tanh (C / 2)];
    - [tv_le_eform] (e-form): if [|d_t| <= c_t] then
      [TV <= ((sum_t p'_t e^{c_t})^2 - 1) / 2];
    - [tv_le_plain]: if [|d_t| <= eps] then [TV <= (e^{2 eps} - 1) / 2];
    - [tv_le_affine]: if moreover [eps <= eps0] then [TV <= e^{2 eps0} * eps];
    - [tv_sink_le_tanh_radius], [tv_sink_le_eform]: the same with an always-visible sink column
      whose logit is identical in both distributions (DeepSeek-V4 attention sinks).

    The counterexample [radius_needed] shows that without a bound on the score errors no TV bound
    below 1/2 holds (two keys, one score moved by 2). *)

From Coq Require Import Reals Lra Lia.
From Witprobe Require Import Sum Softmax ExpLn.
Open Scope R_scope.

(** ** Elementary facts *)

Lemma abs_le_between (x c : R) : Rabs x <= c -> - c <= x <= c.
Proof.
  intros H. destruct (Rcase_abs x) as [Hx|Hx].
  - rewrite Rabs_left in H by exact Hx. lra.
  - rewrite Rabs_right in H by exact Hx. lra.
Qed.

Lemma tanh_nonneg (x : R) : 0 <= x -> 0 <= tanh x.
Proof.
  intros Hx. unfold tanh. pose proof (exp_pos (2 * x)) as Hp.
  assert (1 <= exp (2 * x)) by (rewrite <- exp_0; apply exp_le_mono; lra).
  apply Rmult_le_pos; [lra|]. left. apply Rinv_0_lt_compat. lra.
Qed.

(** [tanh (x / 2)] in terms of [exp x]. *)
Lemma tanh_half (x : R) : tanh (x / 2) = (exp x - 1) / (exp x + 1).
Proof. unfold tanh. replace (2 * (x / 2)) with x by field. reflexivity. Qed.

(** The chord of the convex function [|x - Z|] on [[L, H]]. *)
Lemma abs_chord (L H x Z : R) :
  L <= x <= H -> L <= Z <= H -> (H - L) * Rabs (x - Z) <= (x - L) * (H - Z) + (H - x) * (Z - L).
Proof.
  intros [Hx1 Hx2] [Hz1 Hz2]. destruct (Rle_dec Z x) as [Hzx|Hzx].
  - rewrite Rabs_right by lra.
    assert (0 <= (Z - L) * (H - x)) by (apply Rmult_le_pos; lra). nra.
  - rewrite Rabs_left by lra.
    assert (0 <= (x - L) * (H - Z)) by (apply Rmult_le_pos; lra). nra.
Qed.

(** [(Z - v^2)(u^2 - Z) <= Z (u - v)^2]: the maximum over [Z] is at [Z = u v]. *)
Lemma chord_peak (u v Z : R) : (Z - v * v) * (u * u - Z) <= Z * ((u - v) * (u - v)).
Proof. assert (0 <= (Z - u * v) * (Z - u * v)) by apply Rle_0_sqr. nra. Qed.

(** ** The ratio form of TV *)

Lemma tv_ratio (n : nat) (s s' : nat -> R) :
  (0 < n)%nat ->
  tv n (softmax n s) (softmax n s') =
  / 2 * (sum n (fun t => softmax n s' t * Rabs (exp (s t - s' t) - reweight n s s')) / reweight n s s').
Proof.
  intros Hn. pose proof (reweight_pos n s s' Hn) as HZ. unfold tv. f_equal.
  rewrite <- sum_div_r. apply sum_ext. intros t _.
  rewrite (softmax_ratio n s s' t Hn).
  pose proof (softmax_pos n s' t Hn) as Hp.
  replace (softmax n s' t * exp (s t - s' t) / reweight n s s' - softmax n s' t)
    with (softmax n s' t / reweight n s s' * (exp (s t - s' t) - reweight n s s')) by (field; lra).
  rewrite Rabs_mult, (Rabs_right (softmax n s' t / reweight n s s')).
  - field. lra.
  - left. apply Rdiv_lt_0_compat; lra.
Qed.

(** The mean of a function under [p'] lies between its bounds. *)
Lemma mean_between (n : nat) (s' f : nat -> R) (L H : R) :
  (0 < n)%nat -> (forall t, (t < n)%nat -> L <= f t <= H) ->
  L <= sum n (fun t => softmax n s' t * f t) <= H.
Proof.
  intros Hn Hf. split.
  - replace L with (sum n (fun t => softmax n s' t * L)) at 1
      by (rewrite sum_scal_r, softmax_sum by exact Hn; ring).
    apply sum_le. intros t Ht. pose proof (softmax_pos n s' t Hn). specialize (Hf t Ht). nra.
  - replace H with (sum n (fun t => softmax n s' t * H))
      by (rewrite sum_scal_r, softmax_sum by exact Hn; ring).
    apply sum_le. intros t Ht. pose proof (softmax_pos n s' t Hn). specialize (Hf t Ht). nra.
Qed.

(** ** Centred form *)

(** [sum_t p'_t |x_t - Z| (H - L) <= 2 (Z - L)(H - Z)] for [x_t = e^{d_t}] in [[L, H]]. *)
Lemma abs_dev_chord (n : nat) (s s' : nat -> R) (L H : R) :
  (0 < n)%nat -> (forall t, (t < n)%nat -> L <= exp (s t - s' t) <= H) ->
  (H - L) * sum n (fun t => softmax n s' t * Rabs (exp (s t - s' t) - reweight n s s'))
  <= 2 * ((reweight n s s' - L) * (H - reweight n s s')).
Proof.
  intros Hn Hx. set (Z := reweight n s s').
  assert (HZ : L <= Z <= H) by (apply mean_between; assumption).
  rewrite <- sum_scal_l.
  eapply Rle_trans.
  - apply (sum_le n _ (fun t => softmax n s' t *
             ((exp (s t - s' t) - L) * (H - Z) + (H - exp (s t - s' t)) * (Z - L)))).
    intros t Ht. pose proof (softmax_pos n s' t Hn).
    pose proof (abs_chord L H (exp (s t - s' t)) Z (Hx t Ht) HZ). nra.
  - right.
    rewrite (sum_ext n _ (fun t => (H - Z - (Z - L)) * (softmax n s' t * exp (s t - s' t))
                                   + (H * (Z - L) - L * (H - Z)) * softmax n s' t))
      by (intros t _; ring).
    rewrite sum_plus, !sum_scal_l, softmax_sum by exact Hn.
    fold (reweight n s s'). fold Z. ring.
Qed.

(** Centred form: [lo <= d_t <= hi] for all [t] implies [TV(p, p') <= tanh ((hi - lo) / 4)]. *)
Theorem tv_le_tanh_osc (n : nat) (s s' : nat -> R) (lo hi : R) :
  lo <= hi -> (forall t, (t < n)%nat -> lo <= s t - s' t <= hi) ->
  tv n (softmax n s) (softmax n s') <= tanh ((hi - lo) / 4).
Proof.
  intros Hlh Hd. destruct n as [|m].
  { rewrite tv_empty. apply tanh_nonneg. lra. }
  assert (Hn : (0 < S m)%nat) by lia. set (n := S m) in *.
  set (u := exp (hi / 2)). set (v := exp (lo / 2)).
  assert (Hu : 0 < u) by apply exp_pos. assert (Hv : 0 < v) by apply exp_pos.
  assert (HH : exp hi = u * u) by (unfold u; rewrite <- exp_plus; f_equal; field).
  assert (HL : exp lo = v * v) by (unfold v; rewrite <- exp_plus; f_equal; field).
  assert (Hvu : v <= u) by (apply exp_le_mono; lra).
  assert (Hx : forall t, (t < n)%nat -> exp lo <= exp (s t - s' t) <= exp hi)
    by (intros t Ht; specialize (Hd t Ht); split; apply exp_le_mono; lra).
  pose proof (abs_dev_chord n s s' (exp lo) (exp hi) Hn Hx) as Hc.
  rewrite HH, HL in Hc.
  set (Z := reweight n s s') in *.
  set (S := sum n (fun t => softmax n s' t * Rabs (exp (s t - s' t) - Z))) in *.
  assert (HZ : 0 < Z) by apply reweight_pos, Hn.
  assert (HS : 0 <= S).
  { apply sum_nonneg. intros t _. pose proof (softmax_pos n s' t Hn).
    pose proof (Rabs_pos (exp (s t - s' t) - Z)). nra. }
  rewrite tv_ratio by exact Hn. fold Z. fold S.
  (* tanh ((hi - lo) / 4) = (u - v) / (u + v) *)
  assert (Htanh : tanh ((hi - lo) / 4) = (u - v) / (u + v)).
  { unfold tanh. replace (2 * ((hi - lo) / 4)) with (hi / 2 + - (lo / 2)) by field.
    rewrite exp_plus, exp_Ropp. fold u v. field. split; lra. }
  rewrite Htanh.
  pose proof (chord_peak u v Z) as Hp.
  destruct (Rle_lt_or_eq_dec v u Hvu) as [Hlt|Heq].
  - (* (u + v) S <= 2 Z (u - v) *)
    assert (Hk : (u - v) * ((u + v) * S) <= (u - v) * (2 * Z * (u - v))) by nra.
    assert (Hk' : (u + v) * S <= 2 * Z * (u - v)) by (apply Rmult_le_reg_l with (u - v); lra).
    apply Rmult_le_reg_l with (2 * Z * (u + v)); [nra|].
    replace (2 * Z * (u + v) * (/ 2 * (S / Z))) with ((u + v) * S) by (field; lra).
    replace (2 * Z * (u + v) * ((u - v) / (u + v))) with (2 * Z * (u - v)) by (field; lra).
    exact Hk'.
  - (* u = v: every e^{d_t} equals Z, so S = 0 *)
    assert (Heq2 : exp lo = exp hi) by (rewrite HL, HH, Heq; ring).
    assert (HZ' : exp lo <= Z <= exp hi) by (apply mean_between; assumption).
    assert (HS0 : S = 0).
    { unfold S. rewrite (sum_ext n _ (fun _ => 0)).
      - rewrite sum_const. ring.
      - intros t Ht. specialize (Hx t Ht).
        replace (exp (s t - s' t) - Z) with 0 by lra. rewrite Rabs_R0. ring. }
    rewrite HS0, Heq. replace (u - u) with 0 by ring. unfold Rdiv. rewrite !Rmult_0_l. lra.
Qed.

(** Centred form with a radius: [|d_t| <= C] implies [TV <= tanh (C / 2)]. *)
Theorem tv_le_tanh_radius (n : nat) (s s' : nat -> R) (C : R) :
  0 <= C -> (forall t, (t < n)%nat -> Rabs (s t - s' t) <= C) ->
  tv n (softmax n s) (softmax n s') <= tanh (C / 2).
Proof.
  intros HC Hd. replace (C / 2) with ((C - - C) / 4) by field.
  apply tv_le_tanh_osc; [lra|]. intros t Ht. specialize (Hd t Ht).
  apply abs_le_between in Hd. lra.
Qed.

(** ** e-form, plain form, affine form *)

Definition emoment (n : nat) (s' c : nat -> R) : R := sum n (fun t => softmax n s' t * exp (c t)).

Lemma emoment_ge_reweight (n : nat) (s s' c : nat -> R) :
  (0 < n)%nat -> (forall t, (t < n)%nat -> Rabs (s t - s' t) <= c t) ->
  reweight n s s' <= emoment n s' c.
Proof.
  intros Hn Hd. apply sum_le. intros t Ht. pose proof (softmax_pos n s' t Hn).
  specialize (Hd t Ht). apply abs_le_between in Hd.
  assert (exp (s t - s' t) <= exp (c t)) by (apply exp_le_mono; lra). nra.
Qed.

(** [1 / Z <= E_{p'}[e^{c}]] (Jensen for [1/x], then [e^{-d} <= e^{c}]). *)
Lemma inv_reweight_le_emoment (n : nat) (s s' c : nat -> R) :
  (0 < n)%nat -> (forall t, (t < n)%nat -> Rabs (s t - s' t) <= c t) ->
  / reweight n s s' <= emoment n s' c.
Proof.
  intros Hn Hd. set (Z := reweight n s s'). assert (HZ : 0 < Z) by apply reweight_pos, Hn.
  (* tangent of 1/x at Z: 1/x >= 2/Z - x/Z^2 *)
  apply Rle_trans with (sum n (fun t => softmax n s' t * exp (- (s t - s' t)))).
  - replace (/ Z) with (sum n (fun t => softmax n s' t * (2 / Z - exp (s t - s' t) / (Z * Z)))).
    + apply sum_le. intros t _. pose proof (softmax_pos n s' t Hn).
      set (x := exp (s t - s' t)). assert (Hx : 0 < x) by apply exp_pos.
      rewrite exp_Ropp. fold x.
      assert (2 / Z - x / (Z * Z) <= / x).
      { assert (0 <= (x - Z) * (x - Z)) by apply Rle_0_sqr.
        apply Rmult_le_reg_l with (x * (Z * Z)); [apply Rmult_lt_0_compat; [exact Hx | apply Rmult_lt_0_compat; exact HZ]|].
        replace (x * (Z * Z) * (2 / Z - x / (Z * Z))) with (2 * x * Z - x * x) by (field; lra).
        replace (x * (Z * Z) * / x) with (Z * Z) by (field; lra). nra. }
      nra.
    + rewrite (sum_ext n _ (fun t => 2 / Z * softmax n s' t - / (Z * Z) * (softmax n s' t * exp (s t - s' t))))
        by (intros t _; field; lra).
      rewrite sum_minus, !sum_scal_l, softmax_sum by exact Hn. fold (reweight n s s'). fold Z.
      field. lra.
  - apply sum_le. intros t Ht. pose proof (softmax_pos n s' t Hn).
    specialize (Hd t Ht). apply abs_le_between in Hd.
    assert (exp (- (s t - s' t)) <= exp (c t)) by (apply exp_le_mono; lra). nra.
Qed.

(** e-form: for [n > 0] keys, [|d_t| <= c_t] implies [TV <= (E_{p'}[e^{c}]^2 - 1) / 2].
    ([n > 0] is needed: with no keys the moment is [0] and the right side is [-1/2].) *)
Theorem tv_le_eform (n : nat) (s s' c : nat -> R) :
  (0 < n)%nat -> (forall t, (t < n)%nat -> Rabs (s t - s' t) <= c t) ->
  tv n (softmax n s) (softmax n s') <= / 2 * (emoment n s' c * emoment n s' c - 1).
Proof.
  intros Hn Hd.
  set (M := emoment n s' c). set (Z := reweight n s s').
  assert (HZ : 0 < Z) by apply reweight_pos, Hn.
  assert (HZM : Z <= M) by (apply emoment_ge_reweight; assumption).
  assert (HiZ : / Z <= M) by (apply inv_reweight_le_emoment; assumption).
  assert (HM : 0 < M) by lra.
  rewrite tv_ratio by exact Hn. fold Z.
  apply Rmult_le_compat_l; [lra|]. rewrite <- sum_div_r.
  replace (M * M - 1) with (sum n (fun t => softmax n s' t * (exp (c t) * M - 1))).
  - apply sum_le. intros t Ht. pose proof (softmax_pos n s' t Hn) as Hp.
    specialize (Hd t Ht). apply abs_le_between in Hd.
    set (x := exp (s t - s' t)). set (e := exp (c t)).
    assert (Hx : 0 < x) by apply exp_pos.
    assert (Hxe : x <= e) by (apply exp_le_mono; lra).
    assert (Hex : / e <= x) by (unfold e; rewrite <- exp_Ropp; apply exp_le_mono; lra).
    assert (He : 0 < e) by apply exp_pos.
    (* |x/Z - 1| <= e M - 1 *)
    assert (Habs : Rabs (x - Z) / Z <= e * M - 1).
    { unfold Rdiv. rewrite <- (Rabs_right (/ Z)) by (left; apply Rinv_0_lt_compat, HZ).
      rewrite <- Rabs_mult. apply Rabs_le. split.
      - (* 1 - x/Z <= 1 - (1/e)/M <= e M - 1 *)
        assert (H1 : / e * / M <= x * / Z).
        { apply Rmult_le_compat; try (left; apply Rinv_0_lt_compat; lra); [exact Hex|].
          apply Rinv_le_contravar; lra. }
        replace ((x - Z) * / Z) with (x * / Z - 1) by (field; lra).
        assert (H2 : 0 <= (e * M - 1) * (e * M - 1)) by apply Rle_0_sqr.
        assert (H3 : / e * / M = / (e * M)) by (field; lra).
        assert (H4 : 1 - / (e * M) <= e * M - 1).
        { apply Rmult_le_reg_l with (e * M); [nra|].
          replace (e * M * (1 - / (e * M))) with (e * M - 1) by (field; lra). nra. }
        lra.
      - replace ((x - Z) * / Z) with (x * / Z - 1) by (field; lra).
        assert (x * / Z <= e * M).
        { apply Rmult_le_compat; [lra | left; apply Rinv_0_lt_compat, HZ | exact Hxe | exact HiZ]. }
        lra. }
    replace (softmax n s' t * Rabs (x - Z) / Z) with (softmax n s' t * (Rabs (x - Z) / Z)) by (field; lra).
    apply Rmult_le_compat_l; lra.
  - rewrite (sum_ext n _ (fun t => M * (softmax n s' t * exp (c t)) - softmax n s' t)) by (intros t _; ring).
    rewrite sum_minus, sum_scal_l, softmax_sum by exact Hn. fold (emoment n s' c). fold M. ring.
Qed.

(** Plain form: [0 <= eps] and [|d_t| <= eps] imply [TV <= (e^{2 eps} - 1) / 2]. *)
Theorem tv_le_plain (n : nat) (s s' : nat -> R) (eps : R) :
  0 <= eps -> (forall t, (t < n)%nat -> Rabs (s t - s' t) <= eps) ->
  tv n (softmax n s) (softmax n s') <= / 2 * (exp (2 * eps) - 1).
Proof.
  intros He Hd. destruct n as [|m].
  { rewrite tv_empty. assert (1 <= exp (2 * eps)) by (rewrite <- exp_0; apply exp_le_mono; lra). lra. }
  eapply Rle_trans; [apply (tv_le_eform (S m) s s' (fun _ => eps)); [lia | exact Hd]|].
  unfold emoment. rewrite sum_scal_r, softmax_sum by lia.
  replace (2 * eps) with (eps + eps) by ring. rewrite exp_plus. lra.
Qed.

(** [e^x - 1 <= x e^x] for every real [x]. *)
Lemma exp_sub_one_le (x : R) : exp x - 1 <= x * exp x.
Proof.
  pose proof (exp_ineq1_le (- x)) as H. rewrite exp_Ropp in H.
  pose proof (exp_pos x) as Hp.
  apply Rmult_le_compat_r with (r := exp x) in H; [|lra].
  replace (/ exp x * exp x) with 1 in H by (field; lra). lra.
Qed.

(** Affine form: for [0 <= eps <= eps0], [TV <= e^{2 eps0} * eps]. *)
Theorem tv_le_affine (n : nat) (s s' : nat -> R) (eps eps0 : R) :
  0 <= eps <= eps0 -> (forall t, (t < n)%nat -> Rabs (s t - s' t) <= eps) ->
  tv n (softmax n s) (softmax n s') <= exp (2 * eps0) * eps.
Proof.
  intros [He He0] Hd. eapply Rle_trans; [apply (tv_le_plain n s s' eps He Hd)|].
  pose proof (exp_sub_one_le (2 * eps)).
  assert (exp (2 * eps) <= exp (2 * eps0)) by (apply exp_le_mono; lra). nra.
Qed.

(** ** The always-visible sink column *)

(** A sink logit [sigma] appended to both score vectors at index [n]. *)
Lemma sink_radius (n : nat) (s s' c : nat -> R) (sigma : R) :
  (forall t, (t < n)%nat -> Rabs (s t - s' t) <= c t) -> 0 <= c n ->
  forall t, (t < S n)%nat -> Rabs (extend s n sigma t - extend s' n sigma t) <= c t.
Proof.
  intros Hd Hc t Ht. unfold extend. destruct (Nat.eqb_spec t n) as [-> | Hne].
  - replace (sigma - sigma) with 0 by ring. rewrite Rabs_R0. exact Hc.
  - apply Hd. lia.
Qed.

Theorem tv_sink_le_tanh_radius (n : nat) (s s' : nat -> R) (sigma C : R) :
  0 <= C -> (forall t, (t < n)%nat -> Rabs (s t - s' t) <= C) ->
  tv (S n) (softmax (S n) (extend s n sigma)) (softmax (S n) (extend s' n sigma)) <= tanh (C / 2).
Proof.
  intros HC Hd. apply tv_le_tanh_radius; [exact HC|].
  apply (sink_radius n s s' (fun _ => C) sigma Hd HC).
Qed.

Theorem tv_sink_le_eform (n : nat) (s s' c : nat -> R) (sigma : R) :
  (forall t, (t < n)%nat -> Rabs (s t - s' t) <= c t) -> 0 <= c n ->
  tv (S n) (softmax (S n) (extend s n sigma)) (softmax (S n) (extend s' n sigma))
  <= / 2 * (emoment (S n) (extend s' n sigma) c * emoment (S n) (extend s' n sigma) c - 1).
Proof. intros Hd Hc. apply tv_le_eform; [lia|]. apply sink_radius; assumption. Qed.

(** ** Counterexample: a score error bound is needed *)

(** Two keys with equal served scores; moving one exact score by [2] already gives
    [TV = (e^2 - 1) / (2 (e^2 + 1)) > 1/4]: no TV bound holds without a radius. *)
Lemma radius_needed :
  tv 2 (softmax 2 (fun t => if Nat.eqb t 0 then 2 else 0)) (softmax 2 (fun _ => 0)) > / 4.
Proof.
  unfold tv, softmax, partition. simpl. rewrite exp_0.
  assert (H2 : exp 2 > 3).
  { pose proof (exp_ineq1 2). lra. }
  replace (exp 2 / (0 + exp 2 + 1) - 1 / (0 + 1 + 1)) with ((exp 2 - 1) / (2 * (exp 2 + 1)))
    by (field; lra).
  replace (1 / (0 + exp 2 + 1) - 1 / (0 + 1 + 1)) with (- ((exp 2 - 1) / (2 * (exp 2 + 1))))
    by (field; lra).
  rewrite Rabs_Ropp. rewrite Rabs_right.
  - apply Rmult_gt_reg_l with (2 * (exp 2 + 1)) ; [lra|].
    replace (2 * (exp 2 + 1) * (/ 2 * (0 + (exp 2 - 1) / (2 * (exp 2 + 1)) + (exp 2 - 1) / (2 * (exp 2 + 1)))))
      with (exp 2 - 1) by (field; lra). lra.
  - apply Rle_ge. apply Rmult_le_pos; [lra|]. left. apply Rinv_0_lt_compat. lra.
Qed.
