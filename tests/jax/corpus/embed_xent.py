"""An embedding lookup and a cross-entropy with integer labels, data-parallel, under
jax.value_and_grad: `emb[ids]` and the log-probability of each label (`take_along_axis`) are
`gather`s, and their transposes in the gradient `scatter-add`s -- repeated token ids add into
one row of the embedding's gradient in index order (issue #49: refused before).

Source: the "8-way batch data parallelism" of jax-ml/jax docs/notebooks/shard_map.md (the loss
pmean'd over 'batch', its gradient by jax.grad) with the model every language model starts with:
token embeddings summed over the sequence, a linear classifier, softmax cross-entropy on
int32 labels. Constructs: W[ids] (gather), take_along_axis (gather with batching dims),
value_and_grad of shard_map (scatter-add), pmean, log_softmax. make_scores: the same without
the log-softmax (embed-scores, bit for bit)."""
import _common  # noqa: F401

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import AxisType, PartitionSpec as P  # noqa: E402

INPUTS = ("emb", "w", "ids", "labels")
OUTPUTS = ("loss", "gemb", "gw")
SHAPES = {"emb": "V,E", "w": "E,C", "ids": "N,T", "labels": "N"}
DTYPES = {"ids": "i32", "labels": "i32"}
INTS = {"ids": (0, 6), "labels": (0, 3)}  # ids repeat within and across sequences
MESH = (("batch", 8),)


def loss_dp(emb, w, ids, labels, softmax=True):
    h = jnp.sum(emb[ids], axis=1)  # [N/8, E]: a bag of words
    logits = h @ w
    logp = jax.nn.log_softmax(logits) if softmax else logits
    nll = -jnp.take_along_axis(logp, labels[:, None], axis=1)[:, 0]
    return jax.lax.pmean(jnp.mean(nll), "batch")


def make(batch=8, softmax=True):
    mesh = jax.make_mesh((batch,), ("batch",), axis_types=(AxisType.Auto,),
                         devices=jax.devices()[:batch])
    sm = jax.shard_map(lambda *a: loss_dp(*a, softmax=softmax), mesh=mesh,
                       in_specs=(P(), P(), P("batch"), P("batch")), out_specs=P())
    vg = jax.value_and_grad(sm, argnums=(0, 1))

    def step(emb, w, ids, labels):
        loss, (gemb, gw) = vg(emb, w, ids, labels)
        return loss, gemb, gw
    return jax.jit(step)


def make_scores(batch=8):
    """The same step on the label's logit alone (no log-sum-exp): every float operation is one
    meshrun computes as XLA:CPU does, so the gathers and the scatter-adds of the gradient are
    checked bit for bit (the softmax's exp is the C library's in meshrun, docs/jax.md)."""
    return make(batch, softmax=False)
