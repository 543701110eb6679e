"""matmul-2d, WRONG (violates 'no collective'; another device does my share): each device ppermutes its w block over 'model' to the next device; that device multiplies its x rows by the w block it RECEIVED (the out block owned by its model-neighbour), and ppermutes the product back to the owner. Right numbers, no device holds more than two of the four w blocks, but every output block is computed by a device that does not own it, with two collectives where the exercise asks for none."""
import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P


def mesh_of(data, model):
    return jax.make_mesh((data, model), ("data", "model"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:data * model])


def body(m, x, w):
    fm = [(k, (k + 1) % m) for k in range(m)]; bm = [((k + 1) % m, k) for k in range(m)]
    wo = jax.lax.ppermute(w, "model", fm)
    prod = x @ wo                        # the out block of device (i, j-1)
    return jax.lax.ppermute(prod, "model", bm)


def make(data=2, model=4):
    return jax.jit(jax.shard_map(lambda x, w: body(model, x, w), mesh=mesh_of(data, model),
                                 in_specs=(P("data", None), P(None, "model")),
                                 out_specs=P("data", "model"), check_vma=False))
