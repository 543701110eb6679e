"""Deterministic JSON text of a program dict: keys in insertion order, float32 numbers already
formatted (RawNumber), one equation per line so diffs stay readable."""
import json

from .core import RawNumber

_LINE_LISTS = ("eqns", "exports", "inputs")


def _write(v, out, indent, key=None):
    if isinstance(v, RawNumber):
        out.append(str(v))
    elif isinstance(v, bool) or v is None:
        out.append(json.dumps(v))
    elif isinstance(v, int):
        out.append(str(v))
    elif isinstance(v, float):
        raise TypeError(f"unformatted float {v!r} (use core.float_text)")
    elif isinstance(v, str):
        out.append(json.dumps(v, ensure_ascii=True))
    elif isinstance(v, dict):
        top = indent == 0
        out.append("{")
        for i, (k, x) in enumerate(v.items()):
            if i:
                out.append(",")
            if top:
                out.append("\n ")
            out.append(json.dumps(str(k)))
            out.append(":")
            _write(x, out, indent + 1, k)
        out.append("\n}" if top else "}")
    elif isinstance(v, (list, tuple)):
        lines = key in _LINE_LISTS and len(v) > 0
        out.append("[")
        for i, x in enumerate(v):
            if i:
                out.append(",")
            if lines:
                out.append("\n" + " " * (indent + 1))
            _write(x, out, indent + 1)
        out.append("]")
    else:
        raise TypeError(f"cannot write {type(v).__name__}")


def dumps(prog):
    out = []
    _write(prog, out, 0)
    out.append("\n")
    return "".join(out)
