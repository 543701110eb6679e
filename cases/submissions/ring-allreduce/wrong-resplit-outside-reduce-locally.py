"""ring-allreduce wrong-resplit-outside-reduce-locally, a cheat: x is never handed in by rows. Outside, it is padded and
TRANSPOSED so that shard_map piece i holds the i-th 1/n of EVERY device's block (the runtime's re-split does the
all-to-all of a reduce-scatter for free); each device sums its piece over the blocks locally -- the reduction done with
no ring at all -- and the neighbour ppermutes only all-gather the reduced pieces (plus one decoy pass of the result).
No value holds all of x, every ppermute is between neighbours."""
import numpy as np, jax, jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh, PartitionSpec as P


def make(ring):
    mesh = Mesh(np.array(jax.devices()[:ring]), ("ring",))
    right = [(i, (i + 1) % ring) for i in range(ring)]
    left = [(i, (i - 1) % ring) for i in range(ring)]

    def body(pieces):                      # (1, n, c): my piece of every block
        red = jnp.sum(pieces[0], axis=0)   # (c,): my piece of the sum
        me = lax.axis_index("ring")
        buf = jnp.zeros((ring,) + red.shape, jnp.float32)
        buf = lax.dynamic_update_index_in_dim(buf, red, me, 0)
        cur = red
        for s in range(1, ring):           # all-gather the reduced pieces round the ring
            cur = lax.ppermute(cur, "ring", right)
            buf = lax.dynamic_update_index_in_dim(buf, cur, (me - s) % ring, 0)
        flat = buf.reshape(-1)
        back = lax.ppermute(flat, "ring", left)      # decoy pass of the whole result
        return flat + 0.0 * back

    sm = jax.shard_map(body, mesh=mesh, in_specs=P("ring"), out_specs=P(), check_vma=False)

    def f(x):
        N, D = x.shape
        B = N // ring
        L = B * D
        c = -(-L // ring)
        blocks = jnp.pad(x.reshape(ring, L), ((0, 0), (0, c * ring - L)))      # (n blocks, n*c)
        pieces = jnp.transpose(blocks.reshape(ring, ring, c), (1, 0, 2))      # (n pieces, n blocks, c)
        return sm(pieces)[:L].reshape(B, D)

    return jax.jit(f)
