/-!
# Named rearrangements of natural-number products

`omega` treats a product of two non-literal terms as one atom, so the arithmetic proofs of the
library state every needed product identity as a `have` and let `omega` connect the atoms. The
identities below are those rearrangements, each proved once by a short chain of rewrites with
fully instantiated core lemmas (`Nat.mul_assoc`, `Nat.mul_comm`, `Nat.mul_left_comm`,
`Nat.mul_right_comm`), so that no proof depends on `ac_rfl` or on a `simp` normal form.

Main results:
* `Witprobe.mul_mul_mul_swap`: `x·y·(z·w) = x·z·(y·w)`.
* `Witprobe.mul_assoc_mid`: `x·(y·z)·w = x·y·(z·w)`.
* `Witprobe.mul_left_comm_assoc`: `x·(y·(z·w)) = x·z·(y·w)`.
* `Witprobe.mul_rotate3`: `x·y·z = z·x·y`.
* `Witprobe.mul_assoc_out`: `x·(y·u)·s = u·(x·y·s)`.
* `Witprobe.mul_swap_in`: `p·d·(w·u·a) = u·(p·w·d·a)`.
* `Witprobe.mul_cross_perm`: `a·s·(b·x) = b·(a·x·s)`.
-/

namespace Witprobe

/-- `x·y·(z·w) = x·z·(y·w)`. -/
theorem mul_mul_mul_swap (x y z w : Nat) : x * y * (z * w) = x * z * (y * w) := by
  rw [Nat.mul_assoc x y (z * w), ← Nat.mul_assoc y z w, Nat.mul_comm y z, Nat.mul_assoc z y w,
    ← Nat.mul_assoc x z (y * w)]

/-- `x·(y·z)·w = x·y·(z·w)`. -/
theorem mul_assoc_mid (x y z w : Nat) : x * (y * z) * w = x * y * (z * w) := by
  rw [← Nat.mul_assoc x y z, Nat.mul_assoc (x * y) z w]

/-- `x·(y·(z·w)) = x·z·(y·w)`. -/
theorem mul_left_comm_assoc (x y z w : Nat) : x * (y * (z * w)) = x * z * (y * w) := by
  rw [Nat.mul_left_comm y z w, ← Nat.mul_assoc x z (y * w)]

/-- `x·y·z = z·x·y`. -/
theorem mul_rotate3 (x y z : Nat) : x * y * z = z * x * y := by
  rw [Nat.mul_comm (x * y) z, ← Nat.mul_assoc z x y]

/-- `x·(y·u)·s = u·(x·y·s)`. -/
theorem mul_assoc_out (x y u s : Nat) : x * (y * u) * s = u * (x * y * s) := by
  rw [← Nat.mul_assoc x y u, Nat.mul_assoc (x * y) u s, Nat.mul_left_comm (x * y) u s]

/-- `p·d·(w·u·a) = u·(p·w·d·a)`. -/
theorem mul_swap_in (p d w u a : Nat) : p * d * (w * u * a) = u * (p * w * d * a) := by
  rw [Nat.mul_comm w u, Nat.mul_assoc u w a, Nat.mul_left_comm (p * d) u (w * a),
    ← Nat.mul_assoc (p * d) w a, Nat.mul_right_comm p d w]

/-- `a·s·(b·x) = b·(a·x·s)`. -/
theorem mul_cross_perm (a s b x : Nat) : a * s * (b * x) = b * (a * x * s) := by
  rw [Nat.mul_left_comm (a * s) b x, Nat.mul_right_comm a s x]

/-- Counterexample: products are not invariant under every reordering with an added term;
the identities above are equalities of products only (`2·3·1 ≠ 1·3·2 + 1`). -/
theorem mul_rearrange_not_shift : ¬ (2 * 3 * 1 = 1 * 3 * 2 + 1) := by decide

end Witprobe
