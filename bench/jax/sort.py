"""JAX 0.10.2's jnp.sort, jnp.argsort and lax.top_k on CPU at sort_bench's shapes and inputs
(bench/README.md "Sorting"): the best of 5 jitted runs in process CPU time (all its threads;
the machine may be shared), ns an element.

    build/jax-venv/bin/python bench/jax/sort.py
"""
import time

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

for rows, n in [(1, 1000000), (1000, 1000), (16384, 64)]:
    x = np.random.default_rng(49).standard_normal((rows, n)).astype(np.float32)
    for name, f in [("jnp.sort", jax.jit(lambda a: jnp.sort(a, axis=1))),
                    ("jnp.argsort", jax.jit(lambda a: jnp.argsort(a, axis=1))),
                    ("lax.top_k(8)", jax.jit(lambda a: lax.top_k(a, 8)))]:
        jax.block_until_ready(f(x))
        best = 1e9
        for _ in range(5):
            t = time.process_time()
            jax.block_until_ready(f(x))
            best = min(best, time.process_time() - t)
        print(f"{rows} x {n} {name}: {best:.4f} s {best * 1e9 / x.size:.2f} ns/element")
