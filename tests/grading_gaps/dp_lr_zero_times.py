"""WRONG: lr baked in as 0.1; the input lr only enters as 0*lr, so 'some output depends on lr' holds."""
from dp_hdr import *
def body(w, b, x, y, lr):
    wv, bv = jax.lax.pcast((w, b), "data", to="varying")
    def loss_fn(w, b):
        return jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1))
    loss, (gw, gb) = jax.value_and_grad(loss_fn, argnums=(0, 1))(wv, bv)
    loss, gw, gb = jax.lax.pmean((loss, gw, gb), "data")
    lr_eff = 0.1 + 0.0 * lr
    return w - lr_eff * gw, b - lr_eff * gb, loss
def make(data=8): return wrap(body, data)
