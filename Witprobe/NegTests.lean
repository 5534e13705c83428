import Witprobe.Chain

/-!
# Negative tests: compositions that must not elaborate

The metric is the type. Each `#check_failure` below pins a composition that is *rejected*:
if one of them ever elaborates, `#check_failure` reports an unexpected success and the build
fails. Beside each, the legal version with the missing bridge supplied elaborates.

* A storage contract (`entryL2Write → entryL2Read`) cannot feed a stage that expects a score
  error (`scoreLinfRead`): a residual norm is not a logit error until the score bridge says so.
* A score error cannot be fed to the centred TV transfer, which expects an oscillation.
* The rejected chain of the paper (storage bound added to a TV offset) cannot be written.
-/

namespace Witprobe.NegTests

open Witprobe

/-- Storage stage: entry error at the write to entry error at the read. -/
def storeC : Contract .entryL2Write .entryL2Read :=
  { num := 1, den := 1, off := 5, delta := 0, tier := .certified }

/-- Score bridge: entry error at the read to score error. -/
def scoreC : Contract .entryL2Read .scoreLinfRead :=
  { num := 3, den := 2, off := 0, delta := 0, tier := .certified }

/-- A stage into TV that expects a score error. -/
def tvC : Contract .scoreLinfRead .attnDistTvRead :=
  { num := 1, den := 1, off := 0, delta := 0, tier := .partialCert }

-- Rejected: the storage output (an entry norm) is not the TV stage's input (a score error).
#check_failure (Contract.comp tvC storeC)

-- Legal: with the score bridge in between, the metrics line up.
example : Contract .entryL2Write .attnDistTvRead := Contract.comp tvC (Contract.comp scoreC storeC)

-- Rejected: the centred transfer expects an oscillation, not a uniform score error.
#check_failure (Chain.cons (Stage.affine scoreC) (Chain.cons (Stage.transfer Transfer.centredTv)
  (Chain.nil Metric.attnDistTvRead)))

-- Legal: the softmax transfer takes a uniform score error.
example : Chain .entryL2Read .attnDistTvRead :=
  Chain.cons (Stage.affine scoreC) (Chain.cons (Stage.transfer Transfer.softmaxTv)
    (Chain.nil Metric.attnDistTvRead))

-- Rejected: the paper's retracted chain, storage bound fed directly to a TV stage.
#check_failure (Chain.cons (Stage.affine storeC) (Chain.cons (Stage.affine tvC)
  (Chain.nil Metric.attnDistTvRead)))

end Witprobe.NegTests
