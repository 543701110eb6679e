"""meshrun's three programs written in JAX the way the exercises ask (../shared/spec/problems.md),
and the exercises' structural rules checked on jax.make_jaxpr objects (never on printed text).

Importing this module sets XLA_FLAGS (8 host CPU devices) and JAX_PLATFORMS=cpu before JAX is
imported, so every script that imports it first sees the 8 devices the exercises assume.
"""
import json
import os

_FLAG = "--xla_force_host_platform_device_count=8"
if _FLAG not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _FLAG).strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.extend.core  # noqa: E402,F401
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import AxisType, PartitionSpec as P  # noqa: E402

# --------------------------------------------------------------------------------------------
# The programs. Each make_* returns the jitted function of the global arrays on a mesh of the
# given axis sizes (the first prod(sizes) CPU devices, numbered as jax.make_mesh numbers them).


def mesh_of(sizes, names):
    n = int(np.prod(sizes))
    return jax.make_mesh(tuple(sizes), tuple(names), axis_types=(AxisType.Auto,) * len(sizes),
                         devices=jax.devices()[:n])


def dp_step_body(w, b, x, y, lr):
    # w, b arrive invariant (P()); the gradient of this device's loss must be its own, so they
    # are cast to varying first (without it, grad's transpose would psum the 8 gradients).
    wv, bv = jax.lax.pcast((w, b), "data", to="varying")

    def loss_fn(w, b):
        return jnp.mean(jnp.sum((x @ w + b - y) ** 2, axis=1))

    loss, (gw, gb) = jax.value_and_grad(loss_fn, argnums=(0, 1))(wv, bv)
    loss, gw, gb = jax.lax.pmean((loss, gw, gb), "data")
    return w - lr * gw, b - lr * gb, loss


def make_dp_step(n=8, body=dp_step_body):
    mesh = mesh_of((n,), ("data",))
    return jax.jit(jax.shard_map(body, mesh=mesh,
                                 in_specs=(P(), P(), P("data"), P("data"), P()),
                                 out_specs=(P(), P(), P())))


def tp_mlp_body(x, w1, b1, w2, b2):
    h = jax.nn.relu(x @ w1 + b1)
    out = jax.lax.psum(h @ w2, "model") + b2
    return out, h


def make_tp_mlp(n=8, body=tp_mlp_body):
    mesh = mesh_of((n,), ("model",))
    return jax.jit(jax.shard_map(body, mesh=mesh,
                                 in_specs=(P(), P(None, "model"), P("model"), P("model", None),
                                           P()),
                                 out_specs=(P(), P(None, "model"))))


def mlp_train_body(x, y, w1, b1, w2, b2, lr):
    # The parameters are invariant over 'data' (b2 over both axes); cast over 'data' so each
    # data row of the mesh differentiates its own rows' loss, then one pmean over 'data'.
    params = jax.lax.pcast((w1, b1, w2, b2), "data", to="varying")

    def loss_fn(w1, b1, w2, b2):
        h = jax.nn.relu(x @ w1 + b1)
        out = jax.lax.psum(h @ w2, "model") + b2
        return jnp.mean(jnp.sum((out - y) ** 2, axis=1))

    loss, grads = jax.value_and_grad(loss_fn, argnums=(0, 1, 2, 3))(*params)
    loss, grads = jax.lax.pmean((loss, grads), "data")
    new = tuple(p - lr * g for p, g in zip((w1, b1, w2, b2), grads))
    return (*new, loss)


def make_mlp_train(data=2, model=4, body=mlp_train_body):
    mesh = mesh_of((data, model), ("data", "model"))
    return jax.jit(jax.shard_map(
        body, mesh=mesh,
        in_specs=(P("data", None), P("data", None), P(None, "model"), P("model"),
                  P("model", None), P(), P()),
        out_specs=(P(None, "model"), P("model"), P("model", None), P(), P())))


# Inputs and outputs by name, in the order of meshrun's programs (docs/cases.md), and the
# default mesh: read from the exercise files (cases/exercises/<name>/exercise.json), for the
# programs `make` builds.
def _exercise(name):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "cases", "exercises", name, "exercise.json"),
              encoding="utf-8") as f:
        return json.load(f)


_EXERCISES = {p: _exercise(p) for p in ("dp-step", "tp-mlp", "mlp-train")}
INPUTS = {p: tuple(a["name"] for a in ex["inputs"]) for p, ex in _EXERCISES.items()}
OUTPUTS = {p: tuple(a["name"] for a in ex["outputs"]) for p, ex in _EXERCISES.items()}
DEFAULT_MESH = {p: {a: n for a, n in ex["mesh"]} for p, ex in _EXERCISES.items()}


def make(problem, mesh):
    """The jitted program for a meshrun mesh dict ({"data": 8}, {"data": 2, "model": 4})."""
    if problem == "dp-step":
        return make_dp_step(mesh["data"])
    if problem == "tp-mlp":
        return make_tp_mlp(mesh["model"])
    if problem == "mlp-train":
        return make_mlp_train(mesh["data"], mesh["model"])
    raise ValueError(problem)


# --------------------------------------------------------------------------------------------
# The exercises' structural rules, on the jaxpr objects of jax.make_jaxpr(f)(*args).

REDUCTIONS = {"psum", "psum_invariant", "pmean", "psum2"}


class StructureError(AssertionError):
    pass


def _sub_jaxprs(eqn):
    for v in eqn.params.values():
        for j in (v if isinstance(v, (tuple, list)) else (v,)):
            if isinstance(j, jax.extend.core.ClosedJaxpr):
                yield j.jaxpr
            elif isinstance(j, jax.extend.core.Jaxpr):
                yield j


def _all_eqns(jaxpr):
    for e in jaxpr.eqns:
        yield e
        for sub in _sub_jaxprs(e):
            yield from _all_eqns(sub)


def _axes(eqn):
    a = eqn.params.get("axes", eqn.params.get("axis_name", ()))
    return set(a if isinstance(a, (tuple, list, set, frozenset)) else (a,))


def _is_reduction(eqn, axis):
    return eqn.primitive.name in REDUCTIONS and axis in _axes(eqn)


def find_shard_map(closed):
    found = [e for e in _all_eqns(closed.jaxpr) if e.primitive.name == "shard_map"]
    if len(found) != 1:
        raise StructureError(f"expected one shard_map, found {len(found)}")
    return found[0]


def _producers(jaxpr):
    return {id(o): e for e in jaxpr.eqns for o in e.outvars}


def _ancestry(jaxpr, var):
    """Every eqn of `jaxpr` that `var` depends on."""
    prod = _producers(jaxpr)
    seen, stack, out = set(), [var], []
    while stack:
        v = stack.pop()
        e = prod.get(id(v))
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        out.append(e)
        stack.extend(i for i in e.invars if not isinstance(i, jax.extend.core.Literal))
    return out


def _literal(v, prod=None):
    """The constant v stands for: a literal, or one passed through pvary / broadcast_in_dim /
    convert_element_type (how a Python number reaches a varying operand)."""
    if isinstance(v, jax.extend.core.Literal):
        return float(np.asarray(v.val))
    e = (prod or {}).get(id(v))
    if e is not None and e.primitive.name in ("pvary", "broadcast_in_dim", "convert_element_type"):
        return _literal(e.invars[0], prod)
    return None


def check_blocks(closed, args, specs_axes, names):
    """The body receives exactly its blocks: input i of global shape s arrives as s with each
    dimension divided by the mesh axes its spec names (never the full array when split)."""
    sm = find_shard_map(closed)
    mesh = sm.params["mesh"]
    body = sm.params["jaxpr"]
    sizes = dict(zip(mesh.axis_names, mesh.axis_sizes))
    for name, arg, spec, inv in zip(names, args, sm.params["in_specs"], body.invars):
        want = list(np.shape(arg))
        for dim, ax in enumerate(tuple(spec)):
            for a in ((ax,) if isinstance(ax, str) else (ax or ())):
                want[dim] //= sizes[a]
        if tuple(spec) != tuple(specs_axes[name]):
            raise StructureError(f"{name}: in_spec {spec}, the exercise's is {specs_axes[name]}")
        if tuple(inv.aval.shape) != tuple(want):
            raise StructureError(f"{name}: body receives {inv.aval.shape}, its block is {want}")
        split = int(np.prod([sizes[a] for ax in tuple(spec) if ax
                             for a in ((ax,) if isinstance(ax, str) else ax)] or [1]))
        if split > 1 and tuple(inv.aval.shape) == tuple(np.shape(arg)):
            raise StructureError(f"{name}: body receives the full array {np.shape(arg)}")
    return sm, body, sizes


def check_reduces(body, axis):
    if not any(_is_reduction(e, axis) for e in _all_eqns(body)):
        raise StructureError(f"body never reduces over '{axis}'")


def check_lr_traced(closed, sm, lr_index):
    """lr is an argument of the function and of the shard_map, and the body uses it."""
    top = closed.jaxpr
    if len(top.invars) <= lr_index or top.invars[lr_index].aval.shape != ():
        raise StructureError("lr is not a traced scalar argument (a Python number?)")
    body = sm.params["jaxpr"]
    lr_var = body.invars[lr_index]
    if not any(lr_var is v for e in _all_eqns(body) for v in e.invars):
        raise StructureError("the body never uses its lr argument")


def check_mean_gradient(body, sizes, param_index, axis="data"):
    """Output param_index of the body is param - lr * G where G is the MEAN gradient: exactly one
    reduction over `axis` in G's ancestry, followed by a division by the axis size (pmean as JAX
    lowers it) or a multiply by its inverse -- never the sum (n times the mean), never two sums
    (grad of an invariant parameter psums already; a pmean on top gives n times the mean)."""
    n = sizes[axis]
    out = body.outvars[param_index]
    prod = _producers(body)
    sub = prod.get(id(out))
    if sub is None or sub.primitive.name != "sub" or sub.invars[0] is not body.invars[param_index]:
        raise StructureError(f"output {param_index} is not param - step")
    anc = _ancestry(body, sub.invars[1])
    reds = [e for e in anc if _is_reduction(e, axis)]
    if len(reds) != 1:
        raise StructureError(f"the update's gradient is reduced over '{axis}' {len(reds)} times")
    red_out = reds[0].outvars
    scaled = False
    for e in anc:
        if not any(_ancestry_contains(body, i, reds[0]) or any(i is o for o in red_out)
                   for i in e.invars if not isinstance(i, jax.extend.core.Literal)):
            continue
        lits = [_literal(i, prod) for i in e.invars]
        if e.primitive.name == "div" and lits[1] is not None and lits[1] == n:
            scaled = True
        if e.primitive.name == "mul" and any(v is not None and np.isclose(v * n, 1) for v in lits):
            scaled = True
    if n > 1 and not scaled:
        raise StructureError(f"the update uses the sum over '{axis}' ({n} times the mean gradient)")


def _ancestry_contains(jaxpr, var, eqn):
    return any(e is eqn for e in _ancestry(jaxpr, var))


SPECS = {
    "dp-step": {"w": P(), "b": P(), "x": P("data"), "y": P("data"), "lr": P()},
    "tp-mlp": {"x": P(), "w1": P(None, "model"), "b1": P("model"), "w2": P("model", None),
               "b2": P()},
    "mlp-train": {"x": P("data", None), "y": P("data", None), "w1": P(None, "model"),
                  "b1": P("model"), "w2": P("model", None), "b2": P(), "lr": P()},
}


def check_structure(problem, f, args):
    """Raises StructureError when f (a jitted shard_map program) breaks one of the exercise's
    rules for `problem`; returns the list of rules checked."""
    closed = jax.make_jaxpr(f)(*args)
    names = INPUTS[problem]
    sm, body, sizes = check_blocks(closed, args, SPECS[problem], names)
    rules = ["body receives its blocks, never a full split array"]
    if problem == "dp-step":
        check_reduces(body, "data")
        check_lr_traced(closed, sm, 4)
        for i in (0, 1):
            check_mean_gradient(body, sizes, i)
        rules += ["reduces over 'data'", "lr traced", "update uses the mean gradient"]
    elif problem == "tp-mlp":
        check_reduces(body, "model")
        if tuple(sm.params["out_specs"][1]) != (None, "model"):
            raise StructureError("hidden does not stay split over 'model'")
        rules += ["psum over 'model'", "hidden stays split"]
    else:
        check_reduces(body, "model")
        check_reduces(body, "data")
        check_lr_traced(closed, sm, 6)
        for i in range(4):
            check_mean_gradient(_body_with_param_inputs(body), sizes, i)
        rules += ["psum over 'model'", "pmean over 'data'", "lr traced",
                  "update uses the mean gradient"]
    return rules


class _Remapped:
    """mlp-train's body outputs 0..3 update inputs 2..5: a view with invars in output order."""

    def __init__(self, body):
        self.eqns, self.outvars = body.eqns, body.outvars
        self.invars = body.invars[2:6]


def _body_with_param_inputs(body):
    return _Remapped(body)
