"""A small reference evaluator of a program file with numpy (float32), for the self-test: it
reads the JSON (not JAX's objects), so it checks what meshrun will read. The shard_map body runs
for every device in lockstep (each value is a list of per-device arrays); collectives fold the
devices of a group in rank order. Not fast, not bit-exact with XLA (tolerance tests only)."""
import itertools
import re

import numpy as np

_NP = {"f32": np.float32, "i32": np.int32, "bool": np.bool_}
try:  # issue #49: the dtypes float32 holds exactly (ml_dtypes comes with JAX)
    import ml_dtypes as _ml
    _NP.update({"bf16": _ml.bfloat16, "f16": np.float16, "i8": np.int8, "u8": np.uint8,
                "i16": np.int16, "u16": np.uint16})
except ImportError:
    pass


class EvalError(Exception):
    pass


class NoExport(EvalError):
    """No export of the file has the mesh and binds the shapes."""


def _lit(a):
    v = a["lit"]
    if isinstance(v, str):
        v = float(v)
    return np.asarray(v, dtype=_NP[a["dtype"]])


class DimEnv:
    def __init__(self, values):
        self.values = dict(values)

    def __call__(self, d):
        if isinstance(d, int):
            return d
        expr = re.sub(r"[A-Za-z_][A-Za-z0-9_]*",
                      lambda m: m.group(0) if m.group(0) in ("floordiv", "mod", "max", "min")
                      else str(self.values[m.group(0)]), d)
        return int(eval(expr, {"__builtins__": {}},  # noqa: S307 - digits and four functions
                        {"floordiv": lambda a, b: a // b, "mod": lambda a, b: a % b,
                         "max": max, "min": min}))

    def shape(self, s):
        return tuple(self(d) for d in s)


def bind(invars, arrays):
    env = {}
    for v, a in zip(invars, arrays):
        for d, size in zip(v["type"]["shape"], np.shape(a)):
            if isinstance(d, str):
                m = re.fullmatch(r"(?:(\d+)\*)?([A-Za-z_][A-Za-z0-9_]*)", d.replace(" ", ""))
                if m:
                    c = int(m.group(1) or 1)
                    if size % c:
                        raise EvalError(f"{c} does not evenly divide {size}")
                    env[m.group(2)] = size // c
    return DimEnv(env)


def run(prog, inputs, mesh=None):
    """inputs: {name: array}. Returns {output name: np.ndarray} from the first export whose mesh
    is `mesh` (default: the first export) and whose shapes bind."""
    arrays = [np.asarray(inputs[i["name"]], dtype=_NP[i["dtype"]]) for i in prog["inputs"]]
    for ex in prog["exports"]:
        if mesh is not None and ex["mesh"] != mesh:
            continue
        try:
            dims = bind(ex["jaxpr"]["invars"], arrays)
            if any(dims.shape(v["type"]["shape"]) != a.shape
                   for v, a in zip(ex["jaxpr"]["invars"], arrays)):
                continue
        except (EvalError, KeyError):
            continue
        outs = Evaluator(dims).jaxpr(ex["jaxpr"], arrays, None)
        return {o["name"]: v for o, v in zip(prog["outputs"], outs)}
    raise NoExport("no export matches the mesh and the shapes")


class Evaluator:
    def __init__(self, dims):
        self.dims = dims

    def jaxpr(self, j, args, mesh):
        """mesh None: global values; else (axes, sizes): every value is a list over devices."""
        env = {}
        nd = None if mesh is None else int(np.prod(mesh[1]))

        def put(v, x):
            env[v["id"]] = x

        def get(a):
            if "lit" in a:
                x = _lit(a)
                return x if mesh is None else [x] * nd
            return env[a["id"] if "id" in a else a["var"]]

        for v, x in zip(j["invars"], args):
            put(v, x)
        for v, c in zip(j["constvars"], j["consts"]):
            data = [float(x) if isinstance(x, str) else x for x in c["data"]]
            x = np.asarray(data, dtype=_NP[c["dtype"]]).reshape(c["shape"])
            put(v, x if mesh is None else [x] * nd)
        for e in j["eqns"]:
            ins = [get(a) for a in e["in"]]
            outs = self.eqn(e, ins, mesh)
            for v, x in zip(e["out"], outs):
                put(v, x)
        return [get(a) for a in j["outvars"]]

    # --------------------------------------------------------------------------------------
    def eqn(self, e, ins, mesh):
        p, prim = e["params"], e["primitive"]
        if prim in ("jit", "custom_linear_solve"):  # custom_linear_solve: its solve jaxpr
            return self.jaxpr(p["jaxpr"], ins, mesh)
        if prim in ("custom_jvp_call", "custom_vjp_call", "closed_call", "call", "core_call"):
            return self.jaxpr(p["call_jaxpr"], ins, mesh)
        if prim in ("checkpoint", "remat2"):
            return self.jaxpr(p["jaxpr"], ins, mesh)
        if prim in ("reshard", "device_put", "sharding_constraint", "mesh_cast",
                    "sharding_cast"):
            return list(ins)
        if prim == "scan":
            return self.scan(p, ins, mesh)
        if prim == "while":
            return self.while_(p, ins, mesh)
        if prim == "cond":
            return self.cond(p, ins, mesh)
        if prim == "shard_map":
            if mesh is not None:
                raise EvalError("nested shard_map")
            return self.shard_map(p, ins)
        if prim in _COLLECTIVES:
            if mesh is None:
                raise EvalError(f"{prim} outside shard_map")
            return _COLLECTIVES[prim](self, p, ins, mesh)
        if prim in ("dim_as_value",):
            x = np.asarray(self.dims(p["dim"]), dtype=np.int32)
            return [x if mesh is None else [x] * int(np.prod(mesh[1]))]
        if prim == "split":  # several results: one per size
            def parts(x):
                cuts = np.cumsum([self.dims(n) for n in p["sizes"]])[:-1]
                return np.split(np.asarray(x), cuts, axis=p["axis"])
            if mesh is None:
                return parts(ins[0])
            return [list(r) for r in zip(*(parts(x) for x in ins[0]))]
        if prim == "sort":  # one result per operand (lu's transposed solve sorts its pivots)
            if mesh is None:
                return _sort(p, ins)
            return [list(r) for r in zip(*(_sort(p, dev) for dev in zip(*ins)))]
        if prim == "lu":  # three results: factors, pivots, permutation
            if mesh is None:
                return _lu(self, p, ins[0])
            return [list(r) for r in zip(*(_lu(self, p, x) for x in ins[0]))]
        f = _LOCAL.get(prim)
        if f is None:
            raise EvalError(f"unknown primitive {prim}")
        if mesh is None:
            r = f(self, p, *ins)
            return [r]
        if not ins:  # iota in a shard_map body: one value per device
            return [[f(self, p) for _ in range(int(np.prod(mesh[1])))]]
        return [[f(self, p, *dev) for dev in zip(*ins)]]

    # control flow: under a shard_map every value is a list over devices, run in lockstep
    @staticmethod
    def _uniform(v, mesh, what):
        if mesh is None:
            return np.asarray(v)
        vals = [np.asarray(x) for x in v]
        if any(not np.array_equal(vals[0], x) for x in vals[1:]):
            raise EvalError(f"{what} differs between devices")
        return vals[0]

    def scan(self, p, ins, mesh):
        nc, nk, n = p["num_consts"], p["num_carry"], p["length"]
        consts, carry, xs = ins[:nc], list(ins[nc:nc + nk]), ins[nc + nk:]
        at = (lambda x, i: np.asarray(x)[i]) if mesh is None else (
            lambda x, i: [np.asarray(d)[i] for d in x])
        ys = []
        for i in (range(n - 1, -1, -1) if p["reverse"] else range(n)):
            outs = self.jaxpr(p["jaxpr"], [*consts, *carry, *[at(x, i) for x in xs]], mesh)
            carry, y = outs[:nk], outs[nk:]
            ys.append(y)
        if p["reverse"]:
            ys.reverse()
        ny = len(p["jaxpr"]["outvars"]) - nk
        stacked = []
        for k in range(ny):
            if mesh is None:
                stacked.append(np.stack([np.asarray(y[k]) for y in ys]) if ys else None)
            else:
                nd = len(ins[0]) if ins else int(np.prod(mesh[1]))
                stacked.append([np.stack([np.asarray(y[k][d]) for y in ys]) for d in range(nd)])
        return [*carry, *stacked]

    def while_(self, p, ins, mesh):
        cn, bn = p["cond_nconsts"], p["body_nconsts"]
        cc, bc, carry = ins[:cn], ins[cn:cn + bn], list(ins[cn + bn:])
        for _ in range(1 << 20):
            pred, = self.jaxpr(p["cond_jaxpr"], [*cc, *carry], mesh)
            if not bool(self._uniform(pred, mesh, "a while_loop's predicate")):
                return carry
            carry = self.jaxpr(p["body_jaxpr"], [*bc, *carry], mesh)
        raise EvalError("while: more than 2^20 iterations")

    def cond(self, p, ins, mesh):
        if mesh is not None and len({int(np.asarray(v)) for v in ins[0]}) > 1:
            # devices take different branches: each branch for all (no collective inside
            # them is meaningful then), each device keeps its own
            n = len(p["branches"])
            idx = [int(np.asarray(v)) for v in ins[0]]
            if any(not 0 <= i < n for i in idx):
                raise EvalError(f"cond index outside [0, {n})")
            runs = [self.jaxpr(b, ins[1:], mesh) for b in p["branches"]]
            return [[runs[i][k][d] for d, i in enumerate(idx)] for k in range(len(runs[0]))]
        i = int(self._uniform(ins[0], mesh, "a cond's index"))
        if not 0 <= i < len(p["branches"]):
            raise EvalError(f"cond index {i} outside [0, {len(p['branches'])})")
        return self.jaxpr(p["branches"][i], ins[1:], mesh)

    def shard_map(self, p, ins):
        axes = [a for a, _ in p["mesh"]]
        sizes = [s for _, s in p["mesh"]]
        coords = list(itertools.product(*[range(s) for s in sizes]))
        blocks = []
        for x, sp in zip(ins, p["in_specs"]):
            blocks.append([_block(x, sp, dict(zip(axes, c)), dict(zip(axes, sizes)))
                           for c in coords])
        outs = self.jaxpr(p["jaxpr"], blocks, (axes, sizes))
        res = []
        for vals, sp in zip(outs, p["out_specs"]):
            res.append(_assemble(vals, sp, axes, sizes, coords))
        return res


def _entry_axes(entry):
    return [] if entry is None else ([entry] if isinstance(entry, str) else list(entry))


def _block(x, sp, coord, size):
    idx = []
    for d, entry in enumerate(sp):
        ax = _entry_axes(entry)
        if not ax:
            idx.append(slice(None))
            continue
        k, n = 0, 1
        for a in ax:
            k, n = k * size[a] + coord[a], n * size[a]
        b = x.shape[d] // n
        idx.append(slice(k * b, (k + 1) * b))
    return x[tuple(idx)]


def _assemble(vals, sp, axes, sizes, coords):
    size = dict(zip(axes, sizes))
    named = {a for entry in sp for a in _entry_axes(entry)}
    first = vals[0]
    shape = list(np.shape(first))
    for d, entry in enumerate(sp):
        shape[d] *= int(np.prod([size[a] for a in _entry_axes(entry)] or [1]))
    out = np.zeros(shape, dtype=np.asarray(first).dtype)
    for c, v in zip(coords, vals):
        coord = dict(zip(axes, c))
        if any(coord[a] != 0 for a in axes if a not in named):
            continue
        idx = []
        for d, entry in enumerate(sp):
            ax = _entry_axes(entry)
            k = 0
            for a in ax:
                k = k * size[a] + coord[a]
            b = np.shape(v)[d]
            idx.append(slice(k * b, (k + 1) * b) if ax else slice(None))
        out[tuple(idx)] = v
    return out


def _groups(mesh, names):
    """Devices grouped by their coordinates on the other axes; each group in rank order
    (row-major over `names` in their order)."""
    axes, sizes = mesh
    coords = list(itertools.product(*[range(s) for s in sizes]))
    groups = {}
    for dev, c in enumerate(coords):
        key = tuple(c[i] for i, a in enumerate(axes) if a not in names)
        rank = 0
        for a in names:
            i = axes.index(a)
            rank = rank * sizes[i] + c[i]
        groups.setdefault(key, []).append((rank, dev))
    return [[d for _, d in sorted(g)] for g in groups.values()]


def _cgroups(mesh, p):
    """The devices a collective runs over, as _groups; with axis_index_groups each group split
    into its subgroups, each in the subgroup's listed order (the order a reduction folds in)."""
    groups = _groups(mesh, p["axes"])
    sub = p.get("axis_index_groups")
    if sub is None:
        return groups
    return [[g[i] for i in s] for g in groups for s in sub]


def _all_to_all(ev, p, ins, mesh):
    x, = ins
    r = list(x)
    for g in _cgroups(mesh, p):
        n = len(g)
        for k, d in enumerate(g):
            chunks = [np.split(np.asarray(x[s]), n, axis=p["split_axis"])[k] for s in g]
            r[d] = np.concatenate(chunks, axis=p["concat_axis"])
    return [r]


def _psum(ev, p, ins, mesh):
    outs = []
    for x in ins:
        r = list(x)
        for g in _cgroups(mesh, p):
            acc = x[g[0]]
            for d in g[1:]:
                acc = (acc + x[d]).astype(np.asarray(x[d]).dtype)
            for d in g:
                r[d] = acc
        outs.append(r)
    return outs


def _all_gather(ev, p, ins, mesh):
    x, = ins
    r = list(x)
    dim = p["all_gather_dimension"]
    for g in _cgroups(mesh, p):
        parts = [x[d] for d in g]
        v = np.concatenate(parts, axis=dim) if p["tiled"] else np.stack(parts, axis=dim)
        for d in g:
            r[d] = v
    return [r]


def _reduce_scatter(ev, p, ins, mesh):
    summed, = _psum(ev, p, ins, mesh)
    r = list(summed)
    dim = p["scatter_dimension"]
    for g in _cgroups(mesh, p):
        for k, d in enumerate(g):
            parts = np.split(summed[d], len(g), axis=dim)
            r[d] = parts[k] if p["tiled"] else np.squeeze(parts[k], axis=dim)
    return [r]


def _axis_index(ev, p, ins, mesh):
    r = [None] * int(np.prod(mesh[1]))
    for g in _groups(mesh, p["axes"]):
        for k, d in enumerate(g):
            r[d] = np.asarray(k, dtype=np.int32)
    return [r]


def _ppermute(ev, p, ins, mesh):
    x, = ins
    r = [np.zeros_like(v) for v in x]
    # Over several axes JAX numbers the members in the mesh's order of those axes, whatever the
    # order of p["axes"] (it sorts each group's device ids), unlike the other collectives.
    for g in _groups(mesh, sorted(p["axes"], key=mesh[0].index)):
        for s, t in p["perm"]:
            r[g[t]] = x[g[s]]
    return [r]


def _pfold(f):
    def run(ev, p, ins, mesh):
        outs = []
        for x in ins:
            r = list(x)
            for g in _cgroups(mesh, p):
                acc = np.asarray(x[g[0]])
                for d in g[1:]:
                    acc = f(acc, np.asarray(x[d]))
                for d in g:
                    r[d] = acc
            outs.append(r)
        return outs
    return run


_COLLECTIVES = {"psum": _psum, "psum_invariant": _psum,
                "pmax": _pfold(np.maximum), "pmin": _pfold(np.minimum),
                "all_gather_invariant": lambda ev, p, ins, m: _all_gather(ev, p, ins, m),
                "pvary": lambda ev, p, ins, m: ins, "pcast": lambda ev, p, ins, m: ins,
                "all_gather": _all_gather, "reduce_scatter": _reduce_scatter,
                "axis_index": _axis_index, "ppermute": _ppermute,
                "all_to_all": _all_to_all}


def _f32(f):
    return lambda ev, p, *xs: np.asarray(f(*xs))


def _dot(ev, p, a, b):
    (lc, rc), (lb, rb) = p["contracting"], p["batch"]
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    la = [None] * a.ndim
    lbv = [None] * b.ndim
    for i, j in zip(lb, rb):
        la[i] = lbv[j] = next(letters)
    for i, j in zip(lc, rc):
        la[i] = lbv[j] = next(letters)
    for i in range(a.ndim):
        la[i] = la[i] or next(letters)
    for j in range(b.ndim):
        lbv[j] = lbv[j] or next(letters)
    out = [la[i] for i in lb] + [la[i] for i in range(a.ndim) if i not in lb and i not in lc] + \
          [lbv[j] for j in range(b.ndim) if j not in rb and j not in rc]
    r = np.einsum(f"{''.join(la)},{''.join(lbv)}->{''.join(out)}", a.astype(np.float64),
                  b.astype(np.float64))
    return r.astype(np.float32)


def _bid(ev, p, x):
    shape = ev.dims.shape(p["shape"])
    dims = p["broadcast_dimensions"]
    tmp = [1] * len(shape)
    for i, d in enumerate(dims):
        tmp[d] = np.shape(x)[i]
    return np.broadcast_to(np.reshape(x, tmp), shape).copy()


def _select(ev, p, pred, *cases):
    return np.choose(np.asarray(pred).astype(np.int32), cases)


def _slice(ev, p, x):
    steps = p.get("strides") or [1] * np.ndim(x)
    return np.asarray(x[tuple(slice(ev.dims(a), ev.dims(b), ev.dims(c))
                              for a, b, c in zip(p["start_indices"], p["limit_indices"], steps))])


def _pad(ev, p, x, v):
    x = np.asarray(x)
    for d, (lo, hi, interior) in enumerate(p["padding_config"]):
        lo, hi, interior = ev.dims(lo), ev.dims(hi), ev.dims(interior)
        n = x.shape[d]
        shape = list(x.shape)
        shape[d] = n + max(n - 1, 0) * interior
        r = np.full(shape, v, dtype=x.dtype)
        idx = [slice(None)] * x.ndim
        idx[d] = slice(0, shape[d], interior + 1)
        r[tuple(idx)] = x
        pre = [slice(None)] * x.ndim
        pre[d] = slice(max(-lo, 0), shape[d] - max(-hi, 0))
        r = r[tuple(pre)]
        widths = [(0, 0)] * x.ndim
        widths[d] = (max(lo, 0), max(hi, 0))
        x = np.pad(r, widths, constant_values=v)
    return x


def _dynamic_slice(ev, p, x, *idx):
    sizes = ev.dims.shape(p["slice_sizes"])
    # XLA clamps each start into [0, dim - size]
    starts = [min(max(int(i), 0), d - s) for i, d, s in zip(idx, np.shape(x), sizes)]
    return np.asarray(x[tuple(slice(b, b + s) for b, s in zip(starts, sizes))])


def _dynamic_update_slice(ev, p, x, u, *idx):
    starts = [min(max(int(i), 0), d - s) for i, d, s in zip(idx, np.shape(x), np.shape(u))]
    r = np.array(x)
    r[tuple(slice(b, b + s) for b, s in zip(starts, np.shape(u)))] = u
    return r


# ---- indexing (issue #49): gather and the scatters, element by element, as JAX's rules say
# (clip / promise_in_bounds clamp a gather's starts, fill fills its slice; a scatter drops an
# out-of-bounds window except under clip, which clamps; updates apply in index order).
def _fill_of(x, v):
    if v is None:
        return {np.float32: np.nan, np.int32: np.iinfo(np.int32).min}.get(x.dtype.type, True)
    return float(v) if isinstance(v, str) else v


def _gather(ev, p, x, idx):
    x, idx = np.asarray(x), np.asarray(idx)
    sizes = ev.dims.shape(p["slice_sizes"])
    offset, collapsed = p["offset_dims"], p["collapsed_slice_dims"]
    sim, ob, ib = p["start_index_map"], p["operand_batching_dims"], p["start_indices_batching_dims"]
    win = [d for d in range(x.ndim) if d not in collapsed and d not in ob]
    bshape = idx.shape[:-1]
    out_rank = len(offset) + len(bshape)
    oshape, bi, wi = [], iter(bshape), iter(win)
    for i in range(out_rank):
        oshape.append(sizes[next(wi)] if i in offset else next(bi))
    out = np.empty(oshape, x.dtype)
    bdims = [i for i in range(out_rank) if i not in offset]
    for b in itertools.product(*[range(n) for n in bshape]):
        start, inside = [0] * x.ndim, True
        for k, m in enumerate(sim):
            v, hi = int(idx[b + (k,)]), x.shape[m] - sizes[m]
            if p["mode"] == "fill":
                inside = inside and 0 <= v <= hi
            start[m] = min(max(v, 0), hi)
        for o, i in zip(ob, ib):
            start[o] = b[i]
        for w in itertools.product(*[range(sizes[d]) for d in win]):
            at = [0] * out_rank
            for d, c in zip(bdims, b):
                at[d] = c
            src = list(start)
            for d, c, od in zip(win, w, offset):
                at[od] = c
                src[d] += c
            out[tuple(at)] = x[tuple(src)] if inside else _fill_of(x, p.get("fill_value"))
    return out


def _scatter(combine):
    def f(ev, p, x, idx, u):
        r, idx, u = np.array(x), np.asarray(idx), np.asarray(u)
        uwd, ins = p["update_window_dims"], p["inserted_window_dims"]
        sd, ob, ib = p["scatter_dims_to_operand_dims"], p["operand_batching_dims"], \
            p["scatter_indices_batching_dims"]
        win = [d for d in range(r.ndim) if d not in ins and d not in ob]
        wsize = [1] * r.ndim
        for d, ud in zip(win, uwd):
            wsize[d] = u.shape[ud]
        udims = [d for d in range(u.ndim) if d not in uwd]
        for b in itertools.product(*[range(n) for n in idx.shape[:-1]]):
            start, inside = [0] * r.ndim, True
            for k, m in enumerate(sd):
                v, hi = int(idx[b + (k,)]), r.shape[m] - wsize[m]
                if p["mode"] == "clip":
                    v = min(max(v, 0), hi)
                inside = inside and 0 <= v <= hi
                start[m] = v
            if not inside:
                continue
            for o, i in zip(ob, ib):
                start[o] = b[i]
            for w in itertools.product(*[range(u.shape[d]) for d in uwd]):
                at, src = list(start), [0] * u.ndim
                for d, c in zip(udims, b):
                    src[d] = c
                for d, ud, c in zip(win, uwd, w):
                    at[d] += c
                    src[ud] = c
                r[tuple(at)] = combine(r[tuple(at)], u[tuple(src)])
        return r
    return f


# ---- issue #49: conv_general_dilated (every form of its gradient) and rev, in float64
def _conv(ev, p, lhs, rhs):
    dn = p["dimension_numbers"]
    x = np.transpose(np.asarray(lhs, np.float64), dn["lhs_spec"])  # batch, feature, spatial...
    w = np.transpose(np.asarray(rhs, np.float64), dn["rhs_spec"])  # out, in, spatial...
    n = x.ndim - 2
    ld, rd, st = p["lhs_dilation"], p["rhs_dilation"], p["window_strides"]
    dilated = [(s - 1) * d + 1 if s else 0 for s, d in zip(x.shape[2:], ld)]
    xd = np.zeros(list(x.shape[:2]) + dilated)
    xd[(slice(None), slice(None)) + tuple(slice(None, None, d) for d in ld)] = x
    for d, (lo, hi) in enumerate(p["padding"]):
        ax = d + 2
        keep = [slice(None)] * xd.ndim
        keep[ax] = slice(max(-lo, 0), xd.shape[ax] - max(-hi, 0))
        xd = xd[tuple(keep)]
        widths = [(0, 0)] * xd.ndim
        widths[ax] = (max(lo, 0), max(hi, 0))
        xd = np.pad(xd, widths)
    G, BG = p["feature_group_count"], p["batch_group_count"]
    O, I, K = w.shape[0], w.shape[1], w.shape[2:]
    ob = xd.shape[0] // BG
    out_sp = [max((xd.shape[d + 2] - (K[d] - 1) * rd[d] - 1) // st[d] + 1, 0) for d in range(n)]
    out = np.zeros([ob, O] + out_sp)
    if all(out_sp):
        for k in np.ndindex(*K):
            sl = tuple(slice(kk * r, kk * r + (o - 1) * s + 1, s)
                       for kk, r, o, s in zip(k, rd, out_sp, st))
            patch = xd[(slice(None), slice(None)) + sl]
            for o in range(O):
                g, bg = o // (O // G), o // (O // BG)
                xs = patch[bg * ob:(bg + 1) * ob, g * I:(g + 1) * I]
                out[:, o] += np.tensordot(w[(o, slice(None)) + k], xs, axes=([0], [1]))
    return np.transpose(out, np.argsort(dn["out_spec"])).astype(np.float32)


_CONV = {"conv_general_dilated": _conv,
         "rev": lambda ev, p, x: np.flip(x, axis=tuple(p["dimensions"]))}
# ---- end of issue #49's block

# ---- issue #49: linear algebra (lib/interp/ops/linalg.cpp), in float64: a second opinion on
# the exported program, not JAX's bits
def _batched(f, *xs):
    xs = [np.asarray(x) for x in xs]
    lead = xs[0].shape[:-2]
    outs = [f(*(x.reshape((-1,) + x.shape[-2:])[i] for x in xs))
            for i in range(int(np.prod(lead, dtype=np.int64)))]
    return outs, lead


def _cholesky(ev, p, a):
    def one(m):
        try:
            low = np.linalg.cholesky(m.astype(np.float64))
        except np.linalg.LinAlgError:
            return np.full(m.shape, np.nan)
        return np.where(np.tri(m.shape[0], dtype=bool), low, m)
    outs, lead = _batched(one, a)
    return np.asarray(outs, np.float32).reshape(np.shape(a))


def _triangular_solve(ev, p, a, b):
    def one(m, r):
        t = np.tril(m) if p["lower"] else np.triu(m)
        if p["unit_diagonal"]:
            np.fill_diagonal(t, 1)
        t = t.T if p["transpose_a"] else t
        t, r = t.astype(np.float64), r.astype(np.float64)
        return np.linalg.solve(t, r) if p["left_side"] else np.linalg.solve(t.T, r.T).T
    outs, lead = _batched(one, a, b)
    return np.asarray(outs, np.float32).reshape(np.shape(b))


def _lu_one(m):
    a = m.astype(np.float64)
    rows, cols = a.shape
    piv = []
    for j in range(min(rows, cols)):
        k = j + int(np.argmax(np.abs(a[j:, j])))
        piv.append(k)
        a[[j, k]] = a[[k, j]]
        if a[j, j] != 0:
            a[j + 1:, j] /= a[j, j]
            a[j + 1:, j + 1:] -= np.outer(a[j + 1:, j], a[j, j + 1:])
    perm = list(range(rows))
    for i, k in enumerate(piv):
        perm[i], perm[k] = perm[k], perm[i]
    return a, np.asarray(piv), np.asarray(perm)


def _lu(ev, p, a):
    outs, lead = _batched(_lu_one, a)
    return [np.asarray([o[0] for o in outs], np.float32).reshape(np.shape(a)),
            np.asarray([o[1] for o in outs], np.int32).reshape(lead + (min(np.shape(a)[-2:]),)),
            np.asarray([o[2] for o in outs], np.int32).reshape(lead + (np.shape(a)[-2],))]


def _pivots_to_permutation(ev, p, piv):
    piv = np.asarray(piv)
    m = p["permutation_size"]
    rows = piv.reshape(-1, piv.shape[-1])
    out = np.tile(np.arange(m, dtype=np.int32), (rows.shape[0], 1))
    for r, row in enumerate(rows):
        q = out[r]
        for i, j in enumerate(row):
            j = j + m if j < 0 else j
            x, y = q[min(i, m - 1)], q[min(max(j, 0), m - 1)]
            if i < m:
                q[i] = y
            if 0 <= j < m:
                q[j] = x
    return out.reshape(piv.shape[:-1] + (m,))


def _sort(p, ins):
    if p["num_keys"] != 1:
        raise EvalError("sort with more than one key")
    keys = np.asarray(ins[0])
    order = np.argsort(keys, axis=p["dimension"], kind="stable")
    return [np.take_along_axis(np.asarray(x), order, axis=p["dimension"]) for x in ins]


def _platform_index(ev, p):
    ps = p["platforms"]
    hit = [i for i, x in enumerate(ps) if x is not None and "cpu" in x]
    dflt = [i for i, x in enumerate(ps) if x is None]
    if not hit and not dflt:
        raise EvalError("platform_index: no branch for cpu")
    return np.asarray((hit or dflt)[0], np.int32)


_LINALG = {"cholesky": _cholesky, "platform_index": _platform_index,
           "triangular_solve": _triangular_solve,
           "lu_pivots_to_permutation": _pivots_to_permutation,
           "stack": lambda ev, p, *xs: np.stack(xs, axis=p["axis"])}
# ---- end of issue #49's linear algebra block

_LOCAL = {
    "dynamic_slice": _dynamic_slice, "dynamic_update_slice": _dynamic_update_slice,
    "add": _f32(np.add), "add_any": _f32(np.add), "sub": _f32(np.subtract),
    "mul": _f32(np.multiply), "div": _f32(np.divide), "max": _f32(np.maximum),
    "min": _f32(np.minimum), "pow": _f32(np.power), "neg": _f32(np.negative),
    "abs": _f32(np.abs), "sign": _f32(np.sign), "exp": _f32(np.exp), "log": _f32(np.log),
    "log1p": _f32(np.log1p), "tanh": _f32(np.tanh), "sqrt": _f32(np.sqrt),
    "rsqrt": _f32(lambda x: (1 / np.sqrt(x)).astype(x.dtype)), "square": _f32(np.square),
    "logistic": _f32(lambda x: (1 / (1 + np.exp(-x))).astype(x.dtype)),
    "sin": _f32(np.sin), "cos": _f32(np.cos),
    "stop_gradient": _f32(lambda x: x), "copy": _f32(lambda x: x), "copy_p": _f32(lambda x: x),
    "eq": _f32(np.equal), "ne": _f32(np.not_equal), "lt": _f32(np.less),
    "le": _f32(np.less_equal), "gt": _f32(np.greater), "ge": _f32(np.greater_equal),
    "select_n": _select,
    "integer_pow": lambda ev, p, x: np.asarray(x ** p["y"]).astype(x.dtype),
    "convert_element_type": lambda ev, p, x: np.asarray(x).astype(_NP[p["new_dtype"]]),
    "broadcast_in_dim": _bid,
    "reshape": lambda ev, p, x: np.reshape(x, ev.dims.shape(p["new_sizes"])),
    "squeeze": lambda ev, p, x: np.squeeze(x, axis=tuple(p["dimensions"])),
    "expand_dims": lambda ev, p, x: np.expand_dims(x, axis=tuple(p["dimensions"])),
    "transpose": lambda ev, p, x: np.transpose(x, p["permutation"]),
    "reduce_sum": lambda ev, p, x: np.asarray(np.sum(x, axis=tuple(p["axes"]), dtype=x.dtype)),
    "reduce_max": lambda ev, p, x: np.asarray(np.max(x, axis=tuple(p["axes"]))),
    "reduce_min": lambda ev, p, x: np.asarray(np.min(x, axis=tuple(p["axes"]))),
    "argmax": lambda ev, p, x: np.asarray(np.argmax(x, axis=p["axes"][0])).astype(np.int32),
    "iota": lambda ev, p: np.broadcast_to(
        np.arange(ev.dims.shape(p["shape"])[p["dimension"]]).reshape(
            [-1 if i == p["dimension"] else 1 for i in range(len(p["shape"]))]),
        ev.dims.shape(p["shape"])).astype(_NP[p["dtype"]]),
    "concatenate": lambda ev, p, *xs: np.concatenate(xs, axis=p["dimension"]),
    "slice": _slice, "pad": _pad,
    "clamp": lambda ev, p, lo, x, hi: np.asarray(np.clip(x, lo, hi)).astype(np.asarray(x).dtype),
    "cos": _f32(np.cos), "not": _f32(np.logical_not),
    "rem": _f32(np.fmod), "and": _f32(np.logical_and), "or": _f32(np.logical_or),
    "dot_general": _dot,
    "gather": _gather,
    "scatter": _scatter(lambda a, b: b),
    "scatter-add": _scatter(lambda a, b: a + b),
    "scatter-sub": _scatter(lambda a, b: a - b),
    "scatter-mul": _scatter(lambda a, b: a * b),
    "scatter-min": _scatter(lambda a, b: np.minimum(a, b)),
    "scatter-max": _scatter(lambda a, b: np.maximum(a, b)),
    **_CONV,
    **_LINALG,
}
