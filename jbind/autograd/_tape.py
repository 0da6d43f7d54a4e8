"""The tape: what `record()` keeps of an NDArray program.

An NDArray computed under `record()` carries `_ag = (node, output index)`; a marked
variable carries `_ag = Var(...)` (its gradient buffer and grad_req). A `Node` keeps the
registered `Op` it ran (or, for `Function` and `grad(create_graph=True)`, a pure JAX
function of its inputs), how it ran (train mode, the random key it drew with) and its
inputs: entries of earlier nodes, variables with the value they had, or constants (arrays
nobody marked, captured as the immutable `jax.Array` they held). A node also keeps what
backward needs to differentiate it without running it again: the residuals of its
compiled call's `jax.vjp` (`_saved.py`), or else its input values. Backward applies the
ops' own lowerings' pullbacks (`_pullback.py`), so each op's gradient is the one the
symbolic executor uses.
"""
from __future__ import annotations

import jax.numpy as jnp

from ..base import MXNetError

INPLACE_ERROR = ("NotImplementedError: Inplace operations (+=, -=, x[:]=, etc) are not supported when "
                 "recording with autograd")
GRAD_REQS = ("write", "add", "null")


class Var:
    """A marked variable: the NDArray its gradient goes to and how (grad_req)."""
    __slots__ = ("grad", "req", "fresh", "__weakref__")

    def __init__(self, grad, req: str):
        self.grad, self.req, self.fresh = grad, req, False


class Node:
    """One recorded operation.

    `fn(inputs) -> outputs` is pure JAX; `sig` is a hashable description of what `fn`
    computes (None when it holds Python state, as a `Function` does: such graphs are
    replayed without the compile cache). `inputs` holds ("n", node, k) / ("v", var, value)
    / ("c", value) references; `op` the registered Op, where there is one.

    What backward needs to differentiate the node without running its forward again:
    `diff`, the positions of the inputs a gradient can flow to (entries and variables of
    inexact dtype); `saved`, the pullback entry of the compiled call that ran it and that
    call's residuals (`ndarray/_dispatch.py`), or None, and then `vals`, the values of its
    inputs (backward differentiates `fn` at them); `avals`, its outputs' shapes and dtypes.
    """
    __slots__ = ("op", "fn", "sig", "inputs", "n_out", "freed", "kind", "diff", "saved", "vals", "avals")

    def __init__(self, fn, sig, inputs, n_out, op=None, kind=None, vals=(), outs=(), saved=None, diff=None):
        self.op, self.fn, self.sig, self.inputs, self.n_out = op, fn, sig, tuple(inputs), n_out
        self.freed = False
        self.kind = kind or (op.name if op is not None else "function")
        self.diff = diff_of(self.inputs, vals) if diff is None else diff
        self.saved = saved
        self.vals = tuple(vals) if saved is None and self.diff else ()
        self.avals = tuple((tuple(o.shape), o.dtype) for o in outs)

    def free(self) -> None:
        """Drop what the node holds of arrays (after a backward without retain_graph)."""
        self.freed = True
        self.inputs, self.saved, self.vals = (), None, ()


_INEXACT: dict = {}


def inexact(dtype) -> bool:
    """Whether arrays of `dtype` carry gradients (floating or complex), memoized."""
    got = _INEXACT.get(dtype)
    if got is None:
        got = _INEXACT[dtype] = bool(jnp.issubdtype(dtype, jnp.inexact))
    return got


def diff_of(refs, vals) -> tuple:
    """Positions of the inputs a gradient can reach a variable through: recorded
    entries and variables (not constants) of inexact dtype."""
    return tuple(j for j, (r, v) in enumerate(zip(refs, vals)) if r[0] != "c" and inexact(v.dtype))


def live_ag(array):
    """`array._ag` while it is in a graph: None for an array that never was, and for the
    output of a graph a backward freed, which (as in MXNet) later ops take as a constant."""
    ag = getattr(array, "_ag", None)
    if type(ag) is tuple and ag[0].freed:
        return None
    return ag


def ref_of(array, value):
    """The tape reference for an input: its entry, its variable, or a constant."""
    ag = live_ag(array)
    if ag is None:
        return ("c", value)
    if isinstance(ag, Var):
        return ("v", ag, value)
    return ("n", ag[0], ag[1])


def recorded_inputs(given, datas) -> tuple:
    """`diff_of` for an op about to run: positions of the arrays in `given` (with values
    `datas`) that are in a graph (recorded results or marked variables) and inexact."""
    return tuple(j for j, (g, d) in enumerate(zip(given, datas))
                 if live_ag(g) is not None and inexact(d.dtype))


def op_fn(op, nargs: int, is_train: bool):
    """The pure function of `op`'s inputs (and its random key, last, for a sampling op) the tape keeps."""
    rand = op.random

    def fn(ins):
        key = ins[-1] if rand else None
        data = ins[:-1] if rand else ins
        return op.lower(list(data[:nargs]), list(data[nargs:]), is_train, key)[0]
    return fn


def record_op(op, given, datas, nargs: int, is_train: bool, key, results, saved=None, diff=None, fn=None) -> None:
    """Record `op` run on `given` (NDArrays or other arrays; `datas` their jax values)
    producing the NDArrays `results`, and point each result at the new node. `saved`:
    the call's pullback and residuals (`_dispatch.call_vjp`) for the inputs `diff`; `fn`:
    `op_fn(op, nargs, is_train)` where the caller keeps one."""
    inputs = [ref_of(g, d) for g, d in zip(given, datas)]
    vals = list(datas)
    if op.random:
        inputs.append(("c", key))
        vals.append(key)
    node = Node(fn or op_fn(op, nargs, is_train), ("op", op, nargs, bool(is_train)), inputs, len(results), op=op,
                vals=vals, outs=[r._data for r in results], saved=saved, diff=diff)
    for k, r in enumerate(results):
        r._ag = (node, k)


def record_call(fn, sig, inputs, outputs, kind: str, saved=None, diff=None) -> None:
    """Record a pure JAX computation that is not one registered op (a hybridized block's
    whole graph): `fn(list of input values) -> list of output values`, `inputs` NDArrays
    (or jax arrays, constants) and `outputs` the NDArrays holding its results. `sig` is a
    hashable description of what `fn` computes (equal sigs: equal functions), or None to
    keep tapes holding it out of the compile cache. `saved`: the call's pullback and
    residuals (`_saved.Pullback`) for the inputs `diff` (see `recorded_inputs`), if it
    kept them; else backward differentiates `fn` anew."""
    vals = [getattr(x, "_data", x) for x in inputs]
    node = Node(fn, sig, [ref_of(x, v) for x, v in zip(inputs, vals)], len(outputs), kind=kind, vals=vals,
                outs=[o._data for o in outputs], saved=saved, diff=diff)
    for k, o in enumerate(outputs):
        o._ag = (node, k)


def check_not_in_graph(array) -> None:
    """MXNet's refusal to overwrite, while recording, an array the graph holds."""
    if live_ag(array) is not None:
        raise MXNetError(f"{INPLACE_ERROR}. Write into a new array instead (y = x + 1), or assign "
                         "outside the record() scope")


def _as_list(x, what: str):
    from ..ndarray import ndarray as _ndm
    if isinstance(x, _ndm.NDArray):
        return [x], True
    if isinstance(x, (list, tuple)):
        return list(x), False
    raise MXNetError(f"{what} must be an NDArray or a list of NDArrays, got {type(x).__name__}")


def mark_variables(variables, gradients, grad_reqs="write") -> None:
    """Mark NDArrays as variables to compute gradients for, each with the NDArray its
    gradient is written to (grad_req 'write'), added to ('add') or not computed ('null')."""
    from ..ndarray import ndarray as _ndm
    variables, _ = _as_list(variables, "mark_variables: variables")
    gradients, _ = _as_list(gradients, "mark_variables: gradients")
    reqs = [grad_reqs] * len(variables) if isinstance(grad_reqs, str) else list(grad_reqs)
    if not (len(variables) == len(gradients) == len(reqs)):
        raise MXNetError(f"mark_variables: {len(variables)} variables, {len(gradients)} gradients and "
                         f"{len(reqs)} grad_reqs; give one of each per variable")
    for k, (v, g, r) in enumerate(zip(variables, gradients, reqs)):
        if not isinstance(v, _ndm.NDArray) or not isinstance(g, _ndm.NDArray):
            raise MXNetError(f"mark_variables: variable {k} and its gradient must be NDArrays, got "
                             f"{type(v).__name__} and {type(g).__name__}")
        if r not in GRAD_REQS:
            raise MXNetError(f"mark_variables: grad_req {r!r} of variable {k} is not one of {GRAD_REQS}")
        if tuple(g.shape) != tuple(v.shape):
            raise MXNetError(f"mark_variables: variable {k} has shape {v.shape} but its gradient {g.shape}")
        v._ag = Var(g, r)


def get_symbol(x):
    """The recorded computation of `x` as a Symbol. Marked variables are arguments named
    var0, var1, ... and unmarked input arrays arguments named const0, ...; random keys are
    not inputs. A `Function` or a `grad(create_graph=True)` result has no Symbol form."""
    from ..ndarray import ndarray as _ndm
    from ..ops._base import fields, to_attr_string
    from ..symbol._node import Node as SymNode
    from ..symbol.symbol import Symbol, Variable
    from ._backward import topo
    if not isinstance(x, _ndm.NDArray):
        raise MXNetError(f"get_symbol: expected an NDArray, got {type(x).__name__}")
    ag = getattr(x, "_ag", None)
    if ag is None:
        raise MXNetError("get_symbol: the array was not computed under autograd.record() and is not a "
                         "marked variable; it has no recorded graph")
    names: dict = {}
    built: dict = {}
    counts: dict = {}

    def leaf(key, prefix):
        if key not in names:
            names[key] = Variable(f"{prefix}{sum(1 for k in names if k[0] == key[0])}")._heads[0]
        return names[key]

    def entry(ref, aux):
        if ref[0] == "v":
            return leaf(("v", id(ref[1])), "var")
        if ref[0] == "c":  # arrays share zeros: a constant that is an aux state is its own variable
            return leaf(("c", id(ref[1]), aux), "const")
        return built[id(ref[1])][ref[2]]

    def build(node):
        form = getattr(node.fn, "symbol_form", None)  # a hybridized block's call (gluon/_inline.py)
        if node.op is None and form is not None:
            built[id(node)] = form([entry(r, False) for r in node.inputs])
            return
        if node.op is None:
            raise MXNetError(f"get_symbol: the graph holds a {node.kind} node, which has no Symbol form "
                             "(only registered operators do)")
        refs = node.inputs[:-1] if node.op.random else node.inputs
        nargs = len(node.op.arguments())
        ins = tuple(entry(r, k >= nargs) for k, r in enumerate(refs))
        base = node.op.name.lower()
        n = counts.get(base, 0)
        counts[base] = n + 1
        attrs = {f.name: to_attr_string(getattr(node.op, f.name)) for f in fields(node.op)
                 if getattr(node.op, f.name) is not None}
        if node.op.name == "Custom":
            attrs = {"op_type": node.op.op_type, **dict(node.op.kwargs)}
        sn = SymNode(node.op, f"{base}{n}", attrs, ins)
        built[id(node)] = [(sn, k) for k in range(node.n_out)]

    for node in topo([("n", ag[0], ag[1])] if not isinstance(ag, Var) else []):  # inputs first
        build(node)
    if isinstance(ag, Var):
        return Symbol([leaf(("v", id(ag)), "var")])
    return Symbol([built[id(ag[0])][ag[1]]])
