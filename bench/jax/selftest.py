"""The structural checks of programs.py can fail: each right program passes them and each
deliberately wrong one (the mistakes the exercises' graders exist for) is caught.
Run: build/jax-venv/bin/python bench/jax/selftest.py  (exit 0 when all hold)."""
import sys

import programs as pg  # sets XLA_FLAGS before JAX starts
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

rng = np.random.default_rng(0)
f32 = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
DP = (f32(3, 2), f32(2), f32(16, 3), f32(16, 2), np.float32(0.1))
TP = (f32(2, 3), f32(3, 16), f32(16), f32(16, 2), f32(2))
MT = (f32(8, 3), f32(8, 2), f32(3, 16), f32(16), f32(16, 2), f32(2), np.float32(0.1))


def dp_psum_no_divide(w, b, x, y, lr):  # the 8x gradient: psum where pmean is meant
    wv, bv = jax.lax.pcast((w, b), "data", to="varying")
    loss, (gw, gb) = jax.value_and_grad(
        lambda w, b: jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1)), argnums=(0, 1))(wv, bv)
    loss, gw, gb = jax.lax.psum((loss, gw, gb), "data")
    return w - lr * gw, b - lr * gb, loss / 8


def dp_no_pcast(w, b, x, y, lr):  # grad of invariant w psums already; pmean on top: 8x
    loss, (gw, gb) = jax.value_and_grad(
        lambda w, b: jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1)), argnums=(0, 1))(w, b)
    loss, gw, gb = jax.lax.pmean((loss, gw, gb), "data")
    return w - lr * gw, b - lr * gb, loss


def dp_lr_python(w, b, x, y):  # lr baked in as a Python float
    return pg.dp_step_body(w, b, x, y, 0.1)


def dp_no_reduction(w, b, x, y, lr):  # each device steps on its own shard only
    wv, bv = jax.lax.pcast((w, b), "data", to="varying")
    loss, (gw, gb) = jax.value_and_grad(
        lambda w, b: jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1)), argnums=(0, 1))(wv, bv)
    return w - lr * gw, b - lr * gb, loss


def dp_full_x(w, b, x, y, lr):  # every device receives the whole batch
    i = jax.lax.axis_index("data")
    n = x.shape[0] // 8
    xs = jax.lax.dynamic_slice_in_dim(x, i * n, n)
    ys = jax.lax.dynamic_slice_in_dim(y, i * n, n)
    return pg.dp_step_body(w, b, xs, ys, lr)


def sm(body, in_specs, out_specs, axes=("data",), sizes=(8,), check_vma=True):
    return jax.jit(jax.shard_map(body, mesh=pg.mesh_of(sizes, axes), in_specs=in_specs,
                                 out_specs=out_specs, check_vma=check_vma))


DP_IN = (P(), P(), P("data"), P("data"), P())
DP_OUT = (P(), P(), P())
cases = [
    ("dp-step right", "dp-step", pg.make_dp_step(8), DP, True),
    ("dp-step psum without /n", "dp-step", sm(dp_psum_no_divide, DP_IN, DP_OUT), DP, False),
    ("dp-step grad of invariant w, then pmean", "dp-step", sm(dp_no_pcast, DP_IN, DP_OUT), DP,
     False),
    ("dp-step lr a Python float", "dp-step", sm(dp_lr_python, DP_IN[:4], DP_OUT), DP[:4], False),
    ("dp-step no reduction", "dp-step",
     sm(dp_no_reduction, DP_IN, DP_OUT, check_vma=False), DP, False),
    ("dp-step full x and y on every device", "dp-step",
     sm(dp_full_x, (P(), P(), P(), P(), P()), DP_OUT), DP, False),
    ("tp-mlp right", "tp-mlp", pg.make_tp_mlp(8), TP, True),
    ("tp-mlp w1 replicated", "tp-mlp",
     sm(lambda x, w1, b1, w2, b2: pg.tp_mlp_body(
         x, jax.lax.dynamic_slice_in_dim(w1, jax.lax.axis_index("model") * 2, 2, 1), b1, w2, b2),
        (P(), P(), P("model"), P("model", None), P()), (P(), P(None, "model")), ("model",)),
     TP, False),
    ("mlp-train right", "mlp-train", pg.make_mlp_train(2, 4), MT, True),
    ("mlp-train lr a Python float", "mlp-train",
     sm(lambda x, y, w1, b1, w2, b2: pg.mlp_train_body(x, y, w1, b1, w2, b2, 0.1),
        (P("data", None), P("data", None), P(None, "model"), P("model"), P("model", None), P()),
        (P(None, "model"), P("model"), P("model", None), P(), P()), ("data", "model"), (2, 4)),
     MT[:6], False),
]

failed = 0
for label, problem, f, args, ok in cases:
    try:
        pg.check_structure(problem, f, args)
        verdict, why = True, "passes"
    except pg.StructureError as e:
        verdict, why = False, f"caught: {e}"
    good = verdict == ok
    failed += not good
    print(f"{'ok  ' if good else 'FAIL'} {label}: {why}")
# The right programs also compute: dp-step example 1 of the spec.
r = pg.make_dp_step(8)(np.zeros((1, 1), np.float32), np.zeros(1, np.float32),
                       np.arange(1, 9, dtype=np.float32)[:, None],
                       (2 * np.arange(1, 9, dtype=np.float32) + 1)[:, None], np.float32(0.01))
vals = [np.round(np.asarray(v, np.float64), 6).tolist() for v in r]
good = vals == [[[1.11]], [0.2], 121.0]
failed += not good
print(f"{'ok  ' if good else 'FAIL'} dp-step example 1 -> {vals}")
print(f"{len(cases) + 1 - failed} ok, {failed} failed")
sys.exit(1 if failed else 0)
