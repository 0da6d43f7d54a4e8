"""Shape and dtype inference: op rules run forward and backward to a fixed point.

Rules compute what they can; this walker compares their answers with what is known and
raises one uniform error naming the op, the node, the input and both shapes. Results
are memoized by (fingerprint, given values), so re-inferring a bucket costs a lookup.
A shape is a tuple whose unknown dimensions are 0 (MXNet 1.x's convention); a shape
or dtype that is not known at all is None.
"""
from __future__ import annotations

import collections
import re
import warnings

import numpy as np

from .. import _limits
from .._memo import Memo
from ..base import DTYPE_MX_TO_NP, DTypeError, MXNetError, ShapeError, fmt_shape, np_dtype
from .graph import Graph, graph_of

_MEMO = Memo(8192)


def complete(shape) -> bool:
    return shape is not None and all(d > 0 for d in shape)


def unify_shape(a, b):
    """Merge two partial shapes; raise ValueError if they contradict."""
    if a is None:
        return b
    if b is None:
        return a
    if len(a) != len(b):
        raise ValueError
    out = []
    for x, y in zip(a, b):
        if x and y and x != y:
            raise ValueError
        out.append(x or y)
    return tuple(out)


def unify_dtype(a, b):
    if a is None:
        return b
    if b is None or a == b:
        return a
    raise ValueError


class _Kind:
    def __init__(self, name, rule, unify, fmt, err):
        self.name, self.rule, self.unify, self.fmt, self.err = name, rule, unify, fmt, err


SHAPE = _Kind("shape", lambda op: op.infer_shape, unify_shape, fmt_shape, ShapeError)
DTYPE = _Kind("dtype", lambda op: op.infer_type, unify_dtype,
              lambda t: "None" if t is None else np.dtype(t).name, DTypeError)


def _entry_name(g: Graph, entry: int) -> str:
    for i, off in enumerate(g.offsets):
        n = g.nodes[i]
        if off <= entry < off + n.num_outputs():
            return n.output_name(entry - off)
    return f"entry{entry}"


def _context(g: Graph, kind: _Kind, vals, ni) -> str:
    node = g.nodes[ni]
    names = list(node.op.arguments()) + list(node.op.aux_names)
    parts = [f"{names[k] if k < len(names) else k}={kind.fmt(vals[e])}"
             for k, e in enumerate(g.in_entries[ni])]
    return "  inputs: " + ", ".join(parts)


def propagate(g: Graph, kind: _Kind, initial: dict[int, object]):
    """Run the op rules over graph `g` until nothing changes. -> list of entry values.

    A worklist: every node once in graph order, then again only the nodes touching an
    entry that changed since they last ran (backward inference, such as a weight's shape
    from its data, or a begin state's batch size from its consumers).
    """
    vals = [None] * g.num_entries
    given = set(initial)
    for e, v in initial.items():
        vals[e] = v
    touch = _touching(g)
    n = len(g.nodes)
    pending = collections.deque(range(n))
    queued = [True] * n
    budget = (n + 1) * max(n, 1)
    while pending:
        budget -= 1
        if budget < 0:  # pragma: no cover - only a non-monotone op rule could get here
            raise kind.err(f"{kind.name} inference does not settle")
        ni = pending.popleft()
        queued[ni] = False
        node = g.nodes[ni]
        if node.op is None:
            continue
        ins = g.in_entries[ni]
        nargs = node.num_args()
        off = g.offsets[ni]
        outs = range(off, off + node.num_outputs())
        in_vals = [vals[e] for e in ins[:nargs]]
        out_vals = [vals[e] for e in outs]
        try:
            ia, oa, aa = kind.rule(node.op)(in_vals, out_vals)
        except (ShapeError, DTypeError, ValueError, TypeError, IndexError) as e:
            raise kind.err(f"{node.op.name} '{node.name}': {e}\n{_context(g, kind, vals, ni)}") from None
        for e, v in _pairs(ins, nargs, outs, ia, oa, aa):
            if v is None:
                continue
            old = vals[e]
            if type(v) is type(old) and v == old:  # the common case: the rule confirms what is known
                continue
            v = _norm(kind, v)
            if kind is SHAPE:
                _limits.check_elements(f"{node.op.name} '{node.name}'", v)
            try:
                new = kind.unify(old, v)
            except ValueError:
                slots = list(node.op.arguments()) + list(node.op.aux_names)
                what = _slot_desc(g, node, slots, ins, list(outs), e)
                how = "was given" if e in given else "is"
                raise kind.err(
                    f"{node.op.name} '{node.name}': {what} {how} {kind.fmt(old)} but inferred "
                    f"{kind.fmt(v)}\n{_context(g, kind, vals, ni)}") from None
            if old is None or new != old:
                vals[e] = new
                for nj in touch[e]:
                    if not queued[nj] and (nj != ni or new != v):
                        queued[nj] = True
                        pending.append(nj)
    return vals


def _touching(g: Graph) -> list:
    """Per entry, the op nodes that read or write it (memoized on the graph index)."""
    touch = g.__dict__.get("_touching")
    if touch is None:
        touch = [[] for _ in range(g.num_entries)]
        for ni, node in enumerate(g.nodes):
            if node.op is None:
                continue
            for e in g.in_entries[ni]:
                touch[e].append(ni)
            for e in range(g.offsets[ni], g.offsets[ni] + node.num_outputs()):
                touch[e].append(ni)
        g.__dict__["_touching"] = touch
    return touch


def _norm(kind, v):
    return tuple(int(d) for d in v) if kind is SHAPE else np.dtype(v)


def _pairs(ins, nargs, outs, ia, oa, aa):
    yield from zip(ins[:nargs], ia)
    yield from zip(ins[nargs:], aa)
    yield from zip(outs, oa)


def _slot_desc(g, node, slots, ins, outs, e) -> str:
    if e in outs:
        return f"output '{node.output_name(outs.index(e))}'"
    k = list(ins).index(e)
    return f"argument '{_entry_name(g, e)}' (input '{slots[k]}')"


def _initial(sym, g: Graph, kind: _Kind, args, kwargs):
    """Map user-given values (positional in list_arguments order, or by name) to entries."""
    given = {}
    if args and kwargs:
        raise MXNetError(f"infer_{kind.name}: give values either positionally or by name, not both")
    if args:
        if len(args) > len(g.arg_names):
            raise MXNetError(f"infer_{kind.name}: {len(args)} values given for "
                             f"{len(g.arg_names)} arguments {list(g.arg_names)}")
        for name, v in zip(g.arg_names, args):
            if v is not None:
                given[name] = v
    else:
        for name, v in kwargs.items():
            if name not in g.input_names:
                raise MXNetError(f"infer_{kind.name}: {name!r} is not an input of the symbol; "
                                 f"inputs are {list(g.input_names)}")
            if v is not None:
                given[name] = v
    initial = {}
    for vi in g.var_index:
        node = g.nodes[vi]
        e = g.offsets[vi]
        hint = _hint(node, kind)
        v = given.get(node.name)
        if v is not None:
            v = _parse_given(kind, node.name, v)
            if hint is not None:
                try:
                    v = kind.unify(hint, v)
                except ValueError:
                    raise kind.err(f"Variable '{node.name}': {kind.name} given as {kind.fmt(v)} but the "
                                   f"variable was declared with {kind.fmt(hint)}") from None
        else:
            v = hint
        if v is not None:
            initial[e] = v
    return initial, tuple(sorted((k, _key_val(kind, v)) for k, v in given.items()))


def _key_val(kind, v):
    return tuple(v) if kind is SHAPE else np_dtype(v).name


def _parse_given(kind, name, v):
    if kind is SHAPE:
        try:
            shape = tuple(int(d) for d in v)
        except (TypeError, ValueError, OverflowError):
            raise ShapeError(f"shape for {name!r} must be a tuple of ints, got {v!r}") from None
        if any(d < 0 for d in shape):
            raise ShapeError(f"shape for {name!r} has a negative dimension: {shape}")
        _limits.check_elements(f"shape for {name!r}", shape)
        return shape
    return np_dtype(v)


# A `__shape__` hint: "(2, 3)", "[2,3]", "(5,)", "()", Python 2's "(2L, 3L)". Parsed by
# this pattern, never evaluated; a dimension of 0 is unknown (MXNet 1.x's convention).
_SHAPE_HINT = re.compile(r"\s*[(\[]\s*(\d+L?(\s*,\s*\d+L?)*\s*,?)?\s*[)\]]\s*")


def parse_shape_hint(text, where: str) -> tuple:
    """`text`, a variable's `__shape__` attribute, as a tuple of ints; MXNetError naming
    `where` if it is not a list of non-negative integers or is over the element limit."""
    if not isinstance(text, str) or len(text) > 4096 or not _SHAPE_HINT.fullmatch(text):
        raise ShapeError(f"{where}: __shape__ {_clip(text)} is not a shape (a tuple of non-negative "
                         "integers such as \"(2, 3)\")")
    shape = tuple(int(d.strip().rstrip("L")) for d in text.strip()[1:-1].split(",") if d.strip())
    _limits.check_elements(where, shape)
    return shape


def parse_dtype_hint(text, where: str) -> np.dtype:
    """`text`, a variable's `__dtype__` attribute (MXNet's dtype code, "0" for float32)."""
    code = text.strip() if isinstance(text, str) else None
    if code is None or not code.isdigit() or len(code) > 2 or int(code) not in DTYPE_MX_TO_NP:
        raise DTypeError(f"{where}: __dtype__ {_clip(text)} is not one of MXNet's dtype codes "
                         f"({', '.join(f'{k}={np.dtype(v).name}' for k, v in DTYPE_MX_TO_NP.items())})")
    return np.dtype(DTYPE_MX_TO_NP[int(code)])


def _clip(v) -> str:
    r = repr(v)
    return r if len(r) <= 80 else r[:77] + "..."


def _hint(node, kind):
    if kind is SHAPE:
        s = node.attrs.get("__shape__")
        return parse_shape_hint(s, f"Variable '{node.name}'") if s else None
    t = node.attrs.get("__dtype__")
    return parse_dtype_hint(t, f"Variable '{node.name}'") if t else None


def infer(sym, kind: _Kind, args, kwargs):
    """-> (arg values, out values, aux values), each a list with None where unknown."""
    return _infer(sym, kind, args, kwargs)[:3]


def entry_values(sym, kind: _Kind, kwargs) -> list:
    """The inferred value of every entry of `graph_of(sym)` (for lowering)."""
    return _infer(sym, kind, (), kwargs)[3]


def _infer(sym, kind: _Kind, args, kwargs):
    g = graph_of(sym)
    initial, gkey = _initial(sym, g, kind, args, kwargs)
    memo_key = (sym.fingerprint, kind.name, gkey)
    hit = _MEMO.get(memo_key)
    if hit is not None:
        return hit
    try:
        vals = propagate(g, kind, initial)
    except MXNetError:
        if g.nodes[-1] is sym._heads[-1][0]:
            raise
        # The memoized index holds another (identical) graph's nodes: name ours instead.
        own = Graph(sym._heads)
        propagate(own, kind, _initial(sym, own, kind, args, kwargs)[0])
        raise
    res = ([vals[g.offsets[i]] for i in g.arg_index],
           [vals[e] for e in g.heads],
           [vals[g.offsets[i]] for i in g.aux_index],
           vals)
    # Binding asks again with every argument's value (the plan, then the lowering):
    # the same answer, so file it under that question too.
    if all(v is not None and (kind is not SHAPE or complete(v)) for v in res[0]):
        full = (sym.fingerprint, kind.name,
                tuple(sorted((n, _key_val(kind, v)) for n, v in zip(g.arg_names, res[0]))))
        if full != memo_key and not any(_hint(g.nodes[vi], kind) is not None for vi in g.var_index):
            _MEMO.put(full, res)
    return _MEMO.put(memo_key, res)


def infer_shape(sym, args, kwargs, partial):
    arg, out, aux = infer(sym, SHAPE, args, kwargs)
    done = all(complete(s) for s in arg + out + aux)
    if partial:
        return ([s if s is not None else () for s in arg], [s if s is not None else () for s in out],
                [s if s is not None else () for s in aux])
    if not done:
        names = sym.list_arguments()
        unknown = [f"{n}: {fmt_shape(s) if s is not None else '()'}" for n, s in zip(names, arg)
                   if not complete(s)]
        warnings.warn("Cannot decide shape for the following arguments (0s in shape means unknown "
                      "dimensions). Consider providing them as input:\n\t" + "\n\t".join(unknown[:10]),
                      stacklevel=3)
        return None, None, None
    return list(arg), list(out), list(aux)


def infer_type(sym, args, kwargs, partial):
    arg, out, aux = infer(sym, DTYPE, args, kwargs)
    tolist = lambda xs: [None if t is None else np.dtype(t).type for t in xs]  # noqa: E731
    if not partial and any(t is None for t in arg + out + aux):
        return None, None, None
    return tolist(arg), tolist(out), tolist(aux)
