/-!
# Error metrics as type indices

A metric is `object:metric@site` on the Python side (`witprobe.calculus.metrics`); here each
metric that appears in a kernel-checked chain is one constructor of `Metric`. Contracts are
indexed by their source and target metric, so composing stages whose metrics disagree is a
type error (see `Witprobe/NegTests.lean`). The Python registry marks these metrics `lean=True`;
a test keeps the two lists equal.

| constructor | Python metric |
|---|---|
| `entryL2Write` | `entry:l2@write` |
| `entryL2Read` | `entry:l2@read` |
| `latentL2Write` | `latent:l2@write` |
| `latentL2Read` | `latent:l2@read` |
| `scoreLinfRead` | `score:linf@read` |
| `scoreOscRead` | `score:osc@read` |
| `scoreEformExcessRead` | `score:eform_excess@read` |
| `attnDistTvRead` | `attn_dist:tv@read` |
-/

namespace Witprobe

/-- Units of error that kernel-checked chains may start from, pass through, or end in. -/
inductive Metric where
  | entryL2Write
  | entryL2Read
  | latentL2Write
  | latentL2Read
  | scoreLinfRead
  | scoreOscRead
  | scoreEformExcessRead
  | attnDistTvRead
  deriving DecidableEq, Repr

/-- Counterexample beside the typing rule: two metrics of the same carrier are still different
types, so a relative residual can never be added to a TV mass by accident. -/
theorem entryL2Read_ne_attnDistTvRead : Metric.entryL2Read ≠ Metric.attnDistTvRead := by decide

end Witprobe
