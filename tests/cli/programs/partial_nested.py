"""A shard_map nested in a partial one over the remaining axis, which meshrun refuses (exit 2):
after jax-ml/jax tests/shard_map_test.py, test_nested_partial_auto (x * x in a shard_map over 'j'
inside one with axis_names=frozenset({'i'}), check_vma=False), on an (i=2, j=4) mesh, with a psum
over 'j' in the inner body. Exported to partial-nested.json by

    PYTHONPATH=python build/jax-venv/bin/python -m meshrun_export \\
        tests/cli/programs/partial_nested.py:make --name partial-nested --inputs x \\
        --outputs y --shape x=N,D --mesh i=2,j=4 -o tests/cli/programs/partial-nested.json
"""
import os

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"

import jax  # noqa: E402
from jax.sharding import AxisType, PartitionSpec as P  # noqa: E402


def make(i=2, j=4):
    mesh = jax.make_mesh((i, j), ("i", "j"), axis_types=(AxisType.Auto,) * 2,
                         devices=jax.devices()[:i * j])

    def h(x):
        return jax.shard_map(lambda b: jax.lax.psum(b * b, "j"), in_specs=P(None, "j"),
                             out_specs=P())(x)

    return jax.jit(jax.shard_map(h, mesh=mesh, in_specs=P("i", None), out_specs=P("i", None),
                                 check_vma=False, axis_names=frozenset({"i"})))
