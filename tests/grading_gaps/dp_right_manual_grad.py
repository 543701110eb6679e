"""RIGHT: gradients written by hand (2/N X^T (Xw+b-y)), pmean'd."""
from dp_hdr import *
def body(w, b, x, y, lr):
    r = x @ w + b - y
    nb = x.shape[0]
    gw = jax.lax.pmean(2.0 * x.T @ r / nb, "data")
    gb = jax.lax.pmean(2.0 * jnp.sum(r, axis=0) / nb, "data")
    loss = jax.lax.pmean(jnp.mean(jnp.sum(r ** 2, axis=1)), "data")
    return w - lr * gw, b - lr * gb, loss
def make(data=8): return wrap(body, data)
