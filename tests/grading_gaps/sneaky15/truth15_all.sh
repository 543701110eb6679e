#!/bin/bash
# truth15_all.sh: every wrong submission of sneaky15 on its special inputs (and plain ones), and the
# gallery's right.py of the exercise on the same inputs as a control. Writes truth15.log here.
cd "$(dirname "$0")/../../.."
T=tests/grading_gaps/sneaky15/truth15.py
while read ex name mode; do
  for m in plain $mode; do build/jax-venv/bin/python $T $ex $name $m 2>&1 | grep -v Warn; done
  build/jax-venv/bin/python $T $ex right $mode 2>&1 | grep -v Warn
done <<'LIST' > tests/grading_gaps/sneaky15/truth15.log
ring-allreduce wrong-bfp-column-exponent-ring mixed
tp-mlp wrong-bfp-partials-column-exponent mixed
matmul-2d wrong-bfp-x-column-exponent mixed
dp-step wrong-bfp-gradient-per-array mixed
mlp-train wrong-bfp-gradients-per-array mixed
ring-allreduce wrong-bf16-exact-blocks-summed-in-bf16 bf16
matmul-2d wrong-bf16-exact-blocks-bf16-output bf16
dp-step wrong-bf16-exact-inputs-bf16-gradients bf16
ring-allreduce wrong-identical-blocks-taken-as-reduced equal
tp-mlp wrong-identical-partials-taken-as-reduced equal
tp-mlp wrong-all-active-linear-fold-forgets-b1 active
mlp-train wrong-all-active-linear-fold-forgets-b1 active
ring-allreduce wrong-mostly-zero-block-sent-as-zero sparse
matmul-2d wrong-mostly-zero-rows-as-padding sparse
dp-step wrong-skip-step-when-converged nearfit
ring-allreduce wrong-bucketed-ring-large-blocks-tail-dropped big
LIST
