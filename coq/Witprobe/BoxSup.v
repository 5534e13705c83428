(** * The box bound: TV over the per-key score box, from the served distribution

    Setting (one query row, [n] keys): served scores [s'], exact scores [s], per-key radii
    [r_t] with [|s_t - s'_t| <= r_t]; [p' = softmax s'] (what the compressed cache serves) is
    known, [s] is not. With [d = s - s'], [Z = sum_t p'_t e^{d_t}] ([reweight]) and [w = 1/Z],
    the exact distribution is [p_t = p'_t e^{d_t} w] ([softmax_ratio]).

    Definitions ([u_t = e^{r_t}], [v_t = e^{-r_t}]):
    - [box_up r w = (e^{r} w - 1)_+] and [box_down r w = (1 - e^{-r} w)_+];
    - [box_term lam r w = max (lam box_up, (1 - lam) box_down)];
    - [box_psi n p r h side lam w = sum_t p_t * term_t]: [box_term] for [t <> h]; for the one
      key [h] whose side is fixed by [side], [lam box_up] ([side = true]: the exact probability
      of [h] is at least the served one) or [(1 - lam) box_down] ([side = false]);
    - [box_zhi n p r = sum_t p_t u_t], [box_zlo n p r = sum_t p_t v_t] (they bracket [Z]);
    - [box_grid n p r h K g lam B]: a grid [g_0, ..., g_K] of [w] values whose ends bracket
      [[1/zhi, 1/zlo]], one [lam] in [[0,1]] per side and interval, and every [box_psi] at both
      ends of every interval at most [B];
    - [box_certificate n p r B]: a [box_grid] at level [B], or a radius [C >= r_t] with
      [tanh (C/2) <= B] (the centred bound caps the grid where the grid is coarse).

    Main results:
    - [tv_lambda_split]: [TV = sum_t p'_t (lam (x_t)_+ + (1 - lam)(-x_t)_+)], [x_t = e^{d_t} w - 1],
      for every [lam] (the two parts of [TV] are equal since [sum_t p'_t x_t = 0]);
    - [tv_le_box_psi]: [TV <= box_psi ... lam (1/Z)] for the side of [h] that the exact
      distribution takes (each key's term is monotone in [d_t]);
    - [box_psi_convex_max]: on [[a, b]], [box_psi] is at most its larger end value (a sum of
      maxima of positive parts of affine functions of [w] is convex);
    - [tv_le_box]: [|s_t - s'_t| <= r_t] and [box_certificate n (softmax s') r B] give [TV <= B];
    - [box_banded_claim] (the per-run claim shape): the same with [s_t = scale <q, k_t>] computed
      band by band and [r_t >= scale * sum_b ||q_b|| ||k_{t,b} - k'_{t,b}||] (banded score bridge).

    The measured hypothesis of a per-run theorem is [box_certificate]: the meter
    ([witprobe.probe.box_sup]) exhibits, for every read row, a grid whose [box_psi] values (float64,
    with their error allowance) are at most the layer's [B].

    Counterexample [box_needs_lower_cover]: without [g_0 zhi <= 1] the grid can miss [1/Z]; two
    keys, [lam = 0] and [g = e^{r}] make every [box_psi] [0] while [TV > 0]. *)

From Coq Require Import Reals Lra Lia.
From Witprobe Require Import Sum Softmax ExpLn SoftmaxTV ScoreBridge ClaimsBanded Claims.
Open Scope R_scope.

Definition box_up (r w : R) : R := Rmax 0 (exp r * w - 1).

Definition box_down (r w : R) : R := Rmax 0 (1 - exp (- r) * w).

Definition box_term (lam r w : R) : R := Rmax (lam * box_up r w) ((1 - lam) * box_down r w).

Definition box_key (h : nat) (side : bool) (lam r w : R) (t : nat) : R :=
  if Nat.eqb t h then (if side then lam * box_up r w else (1 - lam) * box_down r w)
  else box_term lam r w.

Definition box_psi (n : nat) (p r : nat -> R) (h : nat) (side : bool) (lam w : R) : R :=
  sum n (fun t => p t * box_key h side lam (r t) w t).

Definition box_zhi (n : nat) (p r : nat -> R) : R := sum n (fun t => p t * exp (r t)).

Definition box_zlo (n : nat) (p r : nat -> R) : R := sum n (fun t => p t * exp (- r t)).

Definition box_grid (n : nat) (p r : nat -> R) (h K : nat) (g : nat -> R) (lam : bool -> nat -> R)
  (B : R) : Prop :=
  (0 < K)%nat /\ g 0%nat * box_zhi n p r <= 1 /\ 1 <= g K * box_zlo n p r /\
  (forall (b : bool) (k : nat), (k < K)%nat ->
     0 <= lam b k <= 1 /\ box_psi n p r h b (lam b k) (g k) <= B /\
     box_psi n p r h b (lam b k) (g (S k)) <= B).

Definition box_certificate (n : nat) (p r : nat -> R) (B : R) : Prop :=
  (exists (h K : nat) (g : nat -> R) (lam : bool -> nat -> R), box_grid n p r h K g lam B)
  \/ (exists C : R, (forall t, (t < n)%nat -> r t <= C) /\ tanh (C / 2) <= B).

(** ** The lambda split of TV *)

(** [|x| / 2 = lam x_+ + (1 - lam) (-x)_+ - (lam - 1/2) x]. *)
Lemma half_abs_split (lam x : R) :
  / 2 * Rabs x = lam * Rmax 0 x + (1 - lam) * Rmax 0 (- x) - (lam - / 2) * x.
Proof.
  destruct (Rle_dec 0 x) as [H | H].
  - rewrite Rabs_right by lra. rewrite (Rmax_right 0 x), (Rmax_left 0 (- x)) by lra. field.
  - rewrite Rabs_left by lra. rewrite (Rmax_left 0 x), (Rmax_right 0 (- x)) by lra. field.
Qed.

Lemma tv_lambda_split (n : nat) (s s' : nat -> R) (lam : R) :
  (0 < n)%nat ->
  tv n (softmax n s) (softmax n s') =
  sum n (fun t => softmax n s' t *
    (lam * Rmax 0 (exp (s t - s' t) / reweight n s s' - 1)
     + (1 - lam) * Rmax 0 (- (exp (s t - s' t) / reweight n s s' - 1)))).
Proof.
  intros Hn. pose proof (reweight_pos n s s' Hn) as HZ.
  set (Z := reweight n s s') in *.
  assert (Hx : forall t, softmax n s t - softmax n s' t = softmax n s' t * (exp (s t - s' t) / Z - 1)).
  { intros t. rewrite (softmax_ratio n s s' t Hn). fold Z. field. lra. }
  assert (H0 : sum n (fun t => softmax n s' t * (exp (s t - s' t) / Z - 1)) = 0).
  { rewrite (sum_ext n _ (fun t => / Z * (softmax n s' t * exp (s t - s' t)) - softmax n s' t))
      by (intros t _; unfold Rdiv; ring).
    rewrite sum_minus, sum_scal_l, softmax_sum by exact Hn.
    change (sum n (fun t => softmax n s' t * exp (s t - s' t))) with (reweight n s s'). fold Z.
    field. lra. }
  unfold tv.
  rewrite (sum_ext n _ (fun t => 2 * (softmax n s' t * (lam * Rmax 0 (exp (s t - s' t) / Z - 1)
            + (1 - lam) * Rmax 0 (- (exp (s t - s' t) / Z - 1))))
            - 2 * (lam - / 2) * (softmax n s' t * (exp (s t - s' t) / Z - 1)))).
  - rewrite sum_minus, !sum_scal_l, H0. field.
  - intros t _. rewrite Hx. pose proof (softmax_pos n s' t Hn) as Hp.
    rewrite Rabs_mult, (Rabs_right (softmax n s' t)) by lra.
    pose proof (half_abs_split lam (exp (s t - s' t) / Z - 1)) as Hs.
    replace (softmax n s' t * Rabs (exp (s t - s' t) / Z - 1))
      with (2 * (softmax n s' t * (/ 2 * Rabs (exp (s t - s' t) / Z - 1)))) by field.
    rewrite Hs. ring.
Qed.

(** ** One key's term *)

Lemma box_up_nonneg (r w : R) : 0 <= box_up r w.
Proof. unfold box_up. apply Rmax_l. Qed.

Lemma box_down_nonneg (r w : R) : 0 <= box_down r w.
Proof. unfold box_down. apply Rmax_l. Qed.

Lemma pos_mono (a b : R) : a <= b -> Rmax 0 a <= Rmax 0 b.
Proof. intros H. apply Rmax_lub; [apply Rmax_l | eapply Rle_trans; [exact H | apply Rmax_r]]. Qed.

(** With [|d| <= r] and [w > 0]: the positive parts of [e^d w - 1] and of its negation are below
    [box_up r w] and [box_down r w]. *)
Lemma pos_le_box_up (d r w : R) :
  Rabs d <= r -> 0 < w -> Rmax 0 (exp d * w - 1) <= box_up r w.
Proof.
  intros Hd Hw. unfold box_up. apply pos_mono.
  assert (exp d <= exp r) by (apply exp_le_mono; apply abs_le_between in Hd; lra).
  nra.
Qed.

Lemma pos_le_box_down (d r w : R) :
  Rabs d <= r -> 0 < w -> Rmax 0 (- (exp d * w - 1)) <= box_down r w.
Proof.
  intros Hd Hw. unfold box_down. apply pos_mono.
  assert (exp (- r) <= exp d) by (apply exp_le_mono; apply abs_le_between in Hd; lra).
  nra.
Qed.

Lemma key_le_box_term (d r w lam : R) :
  Rabs d <= r -> 0 < w -> 0 <= lam <= 1 ->
  lam * Rmax 0 (exp d * w - 1) + (1 - lam) * Rmax 0 (- (exp d * w - 1)) <= box_term lam r w.
Proof.
  intros Hd Hw Hl. pose proof (pos_le_box_up d r w Hd Hw) as Hu.
  pose proof (pos_le_box_down d r w Hd Hw) as Hv.
  unfold box_term. destruct (Rle_dec 0 (exp d * w - 1)) as [Hs | Hs].
  - rewrite (Rmax_left 0 (- (exp d * w - 1))) by lra.
    eapply Rle_trans; [| apply Rmax_l]. nra.
  - rewrite (Rmax_left 0 (exp d * w - 1)) by lra.
    eapply Rle_trans; [| apply Rmax_r]. nra.
Qed.

(** ** TV below [box_psi] at [w = 1/Z] *)

(** The side of key [h]: [true] when its exact probability is at least the served one. *)
Definition exact_side (n : nat) (s s' : nat -> R) (h : nat) : bool :=
  if Rle_dec 0 (exp (s h - s' h) * / reweight n s s' - 1) then true else false.

Lemma tv_le_box_psi (n : nat) (s s' r : nat -> R) (h : nat) (lam : R) :
  (0 < n)%nat -> 0 <= lam <= 1 -> (forall t, (t < n)%nat -> Rabs (s t - s' t) <= r t) ->
  tv n (softmax n s) (softmax n s')
  <= box_psi n (softmax n s') r h (exact_side n s s' h) lam (/ reweight n s s').
Proof.
  intros Hn Hl Hd. pose proof (reweight_pos n s s' Hn) as HZ. unfold exact_side.
  set (Z := reweight n s s') in *.
  assert (Hw : 0 < / Z) by (apply Rinv_0_lt_compat; exact HZ).
  rewrite (tv_lambda_split n s s' lam Hn). fold Z. unfold box_psi. apply sum_le. intros t Ht.
  pose proof (softmax_pos n s' t Hn) as Hp. apply Rmult_le_compat_l; [lra|].
  unfold Rdiv. pose proof (Hd t Ht) as Hdt.
  unfold box_key. destruct (Nat.eqb t h) eqn:Eth.
  - apply Nat.eqb_eq in Eth. subst t.
    pose proof (pos_le_box_up (s h - s' h) (r h) (/ Z) Hdt Hw) as Hu.
    pose proof (pos_le_box_down (s h - s' h) (r h) (/ Z) Hdt Hw) as Hv.
    destruct (Rle_dec 0 (exp (s h - s' h) * / Z - 1)) as [Hs | Hs].
    + rewrite (Rmax_left 0 (- (exp (s h - s' h) * / Z - 1))) by lra. nra.
    + rewrite (Rmax_left 0 (exp (s h - s' h) * / Z - 1)) by lra. nra.
  - apply key_le_box_term; assumption.
Qed.

(** ** Convexity of [box_psi] in [w] *)

Lemma pos_affine_convex (a b th x y : R) :
  0 <= th <= 1 ->
  Rmax 0 (a * (th * x + (1 - th) * y) + b) <= th * Rmax 0 (a * x + b) + (1 - th) * Rmax 0 (a * y + b).
Proof.
  intros Ht. pose proof (Rmax_l 0 (a * x + b)). pose proof (Rmax_r 0 (a * x + b)).
  pose proof (Rmax_l 0 (a * y + b)). pose proof (Rmax_r 0 (a * y + b)).
  apply Rmax_lub; nra.
Qed.

Lemma box_up_convex (r th x y : R) :
  0 <= th <= 1 -> box_up r (th * x + (1 - th) * y) <= th * box_up r x + (1 - th) * box_up r y.
Proof.
  intros Ht. unfold box_up. pose proof (pos_affine_convex (exp r) (-1) th x y Ht) as H.
  replace (exp r * (th * x + (1 - th) * y) - 1) with (exp r * (th * x + (1 - th) * y) + -1) by ring.
  replace (exp r * x - 1) with (exp r * x + -1) by ring.
  replace (exp r * y - 1) with (exp r * y + -1) by ring. exact H.
Qed.

Lemma box_down_convex (r th x y : R) :
  0 <= th <= 1 -> box_down r (th * x + (1 - th) * y) <= th * box_down r x + (1 - th) * box_down r y.
Proof.
  intros Ht. unfold box_down. pose proof (pos_affine_convex (- exp (- r)) 1 th x y Ht) as H.
  replace (1 - exp (- r) * (th * x + (1 - th) * y)) with (- exp (- r) * (th * x + (1 - th) * y) + 1) by ring.
  replace (1 - exp (- r) * x) with (- exp (- r) * x + 1) by ring.
  replace (1 - exp (- r) * y) with (- exp (- r) * y + 1) by ring. exact H.
Qed.

Lemma max_convex (f g fx fy gx gy th : R) :
  0 <= th <= 1 -> f <= th * fx + (1 - th) * fy -> g <= th * gx + (1 - th) * gy ->
  Rmax f g <= th * Rmax fx gx + (1 - th) * Rmax fy gy.
Proof.
  intros Ht Hf Hg. pose proof (Rmax_l fx gx). pose proof (Rmax_r fx gx).
  pose proof (Rmax_l fy gy). pose proof (Rmax_r fy gy). apply Rmax_lub; nra.
Qed.

Lemma box_key_convex (h : nat) (side : bool) (lam r th x y : R) (t : nat) :
  0 <= lam <= 1 -> 0 <= th <= 1 ->
  box_key h side lam r (th * x + (1 - th) * y) t
  <= th * box_key h side lam r x t + (1 - th) * box_key h side lam r y t.
Proof.
  intros Hl Ht. pose proof (box_up_convex r th x y Ht) as Hu. pose proof (box_down_convex r th x y Ht) as Hd.
  assert (Hu' : lam * box_up r (th * x + (1 - th) * y) <= th * (lam * box_up r x) + (1 - th) * (lam * box_up r y))
    by nra.
  assert (Hd' : (1 - lam) * box_down r (th * x + (1 - th) * y)
                <= th * ((1 - lam) * box_down r x) + (1 - th) * ((1 - lam) * box_down r y)) by nra.
  unfold box_key. destruct (Nat.eqb t h); [destruct side; assumption|].
  unfold box_term. apply max_convex; assumption.
Qed.

Lemma box_psi_convex_max (n : nat) (p r : nat -> R) (h : nat) (side : bool) (lam a b x : R) :
  (forall t, (t < n)%nat -> 0 <= p t) -> 0 <= lam <= 1 -> a <= x <= b ->
  box_psi n p r h side lam x <= Rmax (box_psi n p r h side lam a) (box_psi n p r h side lam b).
Proof.
  intros Hp Hl Hx. destruct (Req_dec a b) as [Eab | Nab].
  - subst b. replace x with a by lra. apply Rmax_l.
  - set (th := (b - x) / (b - a)).
    assert (Hth : 0 <= th <= 1).
    { unfold th. split.
      - unfold Rdiv. apply Rmult_le_pos; [lra | left; apply Rinv_0_lt_compat; lra].
      - apply (Rmult_le_reg_r (b - a)); [lra|]. unfold Rdiv. rewrite Rmult_assoc, Rinv_l by lra. lra. }
    assert (Ex : x = th * a + (1 - th) * b) by (unfold th; field; lra).
    eapply Rle_trans.
    + rewrite Ex. unfold box_psi.
      apply (sum_le n _ (fun t => th * (p t * box_key h side lam (r t) a t)
                                  + (1 - th) * (p t * box_key h side lam (r t) b t))).
      intros t Ht. pose proof (Hp t Ht). pose proof (box_key_convex h side lam (r t) th a b t Hl Hth). nra.
    + rewrite sum_plus, !sum_scal_l. fold (box_psi n p r h side lam a). fold (box_psi n p r h side lam b).
      pose proof (Rmax_l (box_psi n p r h side lam a) (box_psi n p r h side lam b)).
      pose proof (Rmax_r (box_psi n p r h side lam a) (box_psi n p r h side lam b)). nra.
Qed.

(** ** The grid *)

Lemma grid_cover (g : nat -> R) (x : R) (K : nat) :
  (0 < K)%nat -> g 0%nat <= x -> x <= g K -> exists k, (k < K)%nat /\ g k <= x <= g (S k).
Proof.
  induction K as [|K IH]; intros HK H0 HKx; [lia|].
  destruct (Rle_dec (g K) x) as [H | H].
  - exists K. split; [lia | lra].
  - destruct K as [|K'].
    + exfalso. lra.
    + destruct (IH ltac:(lia) H0 ltac:(lra)) as [k [Hk Hb]]. exists k. split; [lia | exact Hb].
Qed.

Lemma reweight_between (n : nat) (s s' r : nat -> R) :
  (0 < n)%nat -> (forall t, (t < n)%nat -> Rabs (s t - s' t) <= r t) ->
  box_zlo n (softmax n s') r <= reweight n s s' <= box_zhi n (softmax n s') r.
Proof.
  intros Hn Hd. unfold reweight, box_zlo, box_zhi. split; apply sum_le; intros t Ht;
    pose proof (softmax_pos n s' t Hn) as Hp; pose proof (Hd t Ht) as Hb; apply abs_le_between in Hb;
    apply Rmult_le_compat_l; try lra; apply exp_le_mono; lra.
Qed.

(** ** The box theorem *)

Theorem tv_le_box (n : nat) (s s' r : nat -> R) (B : R) :
  (0 < n)%nat -> (forall t, (t < n)%nat -> Rabs (s t - s' t) <= r t) ->
  box_certificate n (softmax n s') r B ->
  tv n (softmax n s) (softmax n s') <= B.
Proof.
  intros Hn Hd [[h [K [g [lam [HK [Hlo [Hhi Hg]]]]]]] | [C [HC HB]]].
  - pose proof (reweight_pos n s s' Hn) as HZ. pose proof (reweight_between n s s' r Hn Hd) as [Hzl Hzh].
    set (Z := reweight n s s') in *.
    assert (Hw0 : g 0%nat <= / Z).
    { apply (Rmult_le_reg_r Z); [exact HZ|]. rewrite Rinv_l by lra.
      destruct (Rle_dec (g 0%nat) 0); [nra|].
      eapply Rle_trans; [| exact Hlo]. apply Rmult_le_compat_l; lra. }
    assert (HwK : / Z <= g K).
    { apply (Rmult_le_reg_r Z); [exact HZ|]. rewrite Rinv_l by lra.
      assert (0 < box_zlo n (softmax n s') r).
      { apply sum_pos; [exact Hn|]. intros t _. pose proof (softmax_pos n s' t Hn). pose proof (exp_pos (- r t)). nra. }
      assert (0 <= g K) by (destruct (Rle_dec 0 (g K)); [lra | nra]).
      eapply Rle_trans; [exact Hhi|]. apply Rmult_le_compat_l; lra. }
    destruct (grid_cover g (/ Z) K HK Hw0 HwK) as [k [Hk Hb]].
    set (side := exact_side n s s' h).
    destruct (Hg side k Hk) as [Hl [Ha Hb']].
    eapply Rle_trans; [apply (tv_le_box_psi n s s' r h (lam side k) Hn Hl Hd)|]. fold Z side.
    eapply Rle_trans.
    + apply box_psi_convex_max; [| exact Hl | exact Hb].
      intros t _. left. apply softmax_pos, Hn.
    + apply Rmax_lub; assumption.
  - apply (centred_claim C B); [| exact HB |].
    + pose proof (Hd 0%nat Hn) as H0. pose proof (Rabs_pos (s 0%nat - s' 0%nat)).
      pose proof (HC 0%nat Hn). lra.
    + intros t Ht. eapply Rle_trans; [apply Hd; exact Ht | apply HC; exact Ht].
Qed.

(** ** The per-run claim shape (dense KV, banded witness) *)

Theorem box_banded_claim (B : R) :
  forall (n nb : nat) (w : nat -> nat) (scale : R) (q : nat -> nat -> R) (k k' : nat -> nat -> nat -> R)
         (r : nat -> R),
  (0 < n)%nat -> 0 <= scale ->
  (forall t, (t < n)%nat -> scale * banded_witness nb w q (bdiff (k t) (k' t)) <= r t) ->
  box_certificate n (softmax n (fun t => scale * bdot nb w q (k' t))) r B ->
  tv n (softmax n (fun t => scale * bdot nb w q (k t)))
       (softmax n (fun t => scale * bdot nb w q (k' t))) <= B.
Proof.
  intros n nb w scale q k k' r Hn Hs Hr Hc. apply (tv_le_box n _ _ r B Hn); [| exact Hc].
  intros t Ht. eapply Rle_trans; [apply banded_radius; exact Hs | apply Hr; exact Ht].
Qed.

(** ** Counterexample: the grid must reach down to [1/zhi] *)

(** Two keys, served scores [0, 0], exact scores [1, 0], radius [1]. The one-interval grid
    [g = e, e] with [lam = 0] reaches up to [1/zlo = e] but not down to [1/Z]; every [box_psi] is
    [0] there, yet [TV = (e - 1) / (2 (e + 1)) > 0]. So [g_0 zhi <= 1] cannot be dropped. *)
Lemma box_needs_lower_cover :
  let s := fun t : nat => if Nat.eqb t 0 then 1 else 0 in
  let s' := fun _ : nat => 0 in
  let r := fun _ : nat => 1 in
  let g := fun _ : nat => exp 1 in
  let lam := fun (_ : bool) (_ : nat) => 0 in
  (forall t, (t < 2)%nat -> Rabs (s t - s' t) <= r t)
  /\ 1 <= g 1%nat * box_zlo 2 (softmax 2 s') r
  /\ (forall (b : bool) (k : nat), (k < 1)%nat ->
        0 <= lam b k <= 1 /\ box_psi 2 (softmax 2 s') r 0 b (lam b k) (g k) <= 0
        /\ box_psi 2 (softmax 2 s') r 0 b (lam b k) (g (S k)) <= 0)
  /\ 0 < tv 2 (softmax 2 s) (softmax 2 s').
Proof.
  intros s s' r g lam.
  assert (Hee : exp (- (1)) * exp 1 = 1)
    by (rewrite <- exp_plus; replace (- (1) + 1) with 0 by ring; apply exp_0).
  assert (He1 : 1 < exp 1).
  { pose proof (exp_increasing 0 1 ltac:(lra)) as H01. rewrite exp_0 in H01. exact H01. }
  assert (Hp : forall t, softmax 2 s' t = / 2).
  { intros t. unfold softmax, partition, s'. simpl. rewrite exp_0. field. }
  assert (Hdown : box_down 1 (exp 1) = 0).
  { unfold box_down. rewrite Hee. replace (1 - 1) with 0 by ring. apply Rmax_left. lra. }
  split; [| split; [| split]].
  - intros t Ht. unfold s, s', r. destruct (Nat.eqb t 0); rewrite Rminus_0_r.
    + rewrite Rabs_R1. lra.
    + rewrite Rabs_R0. lra.
  - unfold g, box_zlo, r. simpl. rewrite !Hp.
    replace (exp 1 * (0 + / 2 * exp (- (1)) + / 2 * exp (- (1)))) with (exp (- (1)) * exp 1) by field.
    rewrite Hee. lra.
  - intros b k Hk. unfold lam, g.
    assert (Hz : box_psi 2 (softmax 2 s') r 0 b 0 (exp 1) = 0).
    { unfold box_psi, box_key, box_term, r. simpl. rewrite Hdown.
      destruct b; rewrite ?Rmult_0_l, ?Rmult_0_r, ?Rminus_0_r, ?Rmult_1_l, ?Rmax_left by lra; ring. }
    rewrite Hz. split; [lra | split; lra].
  - unfold tv. simpl. rewrite !Hp. unfold softmax, partition, s. simpl. rewrite exp_0.
    replace (exp 1 / (0 + exp 1 + 1) - / 2) with ((exp 1 - 1) / (2 * (exp 1 + 1))) by (field; lra).
    replace (1 / (0 + exp 1 + 1) - / 2) with (- ((exp 1 - 1) / (2 * (exp 1 + 1)))) by (field; lra).
    rewrite Rabs_Ropp. rewrite Rabs_right.
    + assert (0 < (exp 1 - 1) / (2 * (exp 1 + 1))) by (apply Rdiv_lt_0_compat; lra). lra.
    + left. apply Rdiv_lt_0_compat; lra.
Qed.
