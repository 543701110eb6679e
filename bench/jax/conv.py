"""conv_general_dilated in meshrun beside JAX (issue #49): a 3x3 conv layer, NHWC x HWIO, forward
and with its gradient (the two more convs jax.grad emits), outside any shard_map.

Each is exported with meshrun_export and run by `meshrun run --repeat N` (one process): a run's
time is (total_s of N + 1 runs - total_s of 1 run) / N from --timings, so the process start, the
read of the case and the write of the result cancel. JAX runs the same jitted function N times
after a warm-up (block_until_ready each); its run's time is the median. Printed: each one's time
per run, its GFLOP/s (2 a multiply-add of the convs) and meshrun / JAX.

  build/jax-venv/bin/python bench/jax/conv.py build/release/meshrun
"""
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

import numpy as np  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import meshrun_export as mx  # noqa: E402
from per_run import jax_per_run, meshrun_per_run  # noqa: E402

N = 10
B, H, W, C, F, K = 8, 32, 32, 16, 32, 3


def conv(x, w):
    return jax.lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))


def forward(x, w):
    return jnp.tanh(conv(x, w))


def grad(x, w):
    return jax.grad(lambda x, w: jnp.sum(jnp.tanh(conv(x, w)) ** 2), argnums=(0, 1))(x, w)


def main():
    meshrun = str(Path(sys.argv[1]).resolve())
    stamp = time.strftime("%Y-%m-%d %H:%MZ", time.gmtime())
    print(f"# bench/jax/conv.py {stamp}, jax {jax.__version__}, {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.2f}, N = {N}, x f32[{B},{H},{W},{C}], w f32[{K},{K},{C},{F}]")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((B, H, W, C)).astype(np.float32)
    w = (rng.standard_normal((K, K, C, F)) * 0.1).astype(np.float32)
    one_conv = 2.0 * B * H * W * F * K * K * C
    with tempfile.TemporaryDirectory() as tmp:
        case = Path(tmp, "case.json")
        case.write_text(json.dumps({"input": {"x": x.tolist(), "w": w.tolist()}}))
        for name, f, outs, convs in (("forward", forward, ["y"], 1),
                                     ("gradient", grad, ["gx", "gw"], 3)):
            fn = jax.jit(f)
            prog = mx.export(fn, x, w, names=["x", "w"], outputs=outs, name=name)
            Path(tmp, name + ".json").write_text(mx.dumps(prog))
            m = meshrun_per_run(meshrun, str(Path(tmp, name + ".json")), str(case), N)
            j = jax_per_run(fn, (x, w), N)
            flops = one_conv * convs
            print(f"{name} ({convs} conv): meshrun {m * 1e3:.2f} ms/run "
                  f"({flops / m / 1e9:.1f} GFLOP/s), JAX {j * 1e3:.2f} ms/run "
                  f"({flops / j / 1e9:.1f} GFLOP/s), meshrun/JAX {m / j:.2f}")


if __name__ == "__main__":
    main()
