"""`backward` and `grad`.

Both walk the recorded nodes back from the heads applying each node's pullback to the
residuals its forward kept (`_pullback.py`): the forward is not run again. Where the
gradient must be a function of the variables' values (`grad(create_graph=True)`, whose
result is differentiated again) or variables are integers (differentiated as float32
copies), they replay the recorded nodes as one pure JAX function of the marked
variables and differentiate it with `jax.vjp` instead.

Either way the compiled function is keyed by the tape's structure (each node's op and
mode, its wiring, the shapes and dtypes of variables and constants), so a training loop
that records the same computation every step compiles its backward once and then runs
one jitted call a step. Residuals, constants, random keys and variable values are
arguments of that call, not part of the key. A tape holding a `Function` (Python
state) runs without jit.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .._memo import Memo
from ..compile._options import jit as small_jit
from ..base import MXNetError
from . import _pullback
from ._tape import Node, Var, _as_list, inexact

_NOT_RECORDED = ("cannot differentiate: the array is not in a computational graph. Compute it inside "
                 "`with autograd.record():` from arrays marked with attach_grad() / mark_variables()")
_FREED = ("cannot differentiate the same graph twice: the first backward freed it. Pass "
          "retain_graph=True to the first backward (or grad) to differentiate a graph again")

_COMPILED = Memo(512)  # structure -> jitted gradient function


def compiled_count() -> int:
    """How many backward programs (one per tape structure and request) are held."""
    return len(_COMPILED)


def topo(head_refs) -> list:
    """The nodes the references reach, inputs before users (iterative: tapes may be deep)."""
    order, seen = [], set()
    stack = [(r[1], False) for r in reversed(head_refs) if r[0] == "n"]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        if node.freed:
            raise MXNetError(_FREED)
        seen.add(id(node))
        stack.append((node, True))
        stack.extend((r[1], False) for r in reversed(node.inputs) if r[0] == "n" and id(r[1]) not in seen)
    return order


class _Tape:
    """A sub-tape in numbered form: nodes, variables, constants and the heads."""

    def __init__(self, head_refs):
        self.nodes = topo(head_refs)
        index = {id(n): i for i, n in enumerate(self.nodes)}
        self.vars, self.var_vals, self.consts = [], [], []
        var_index: dict = {}

        def number(r):
            if r[0] == "n":
                return ("n", index[id(r[1])], r[2])
            if r[0] == "v":
                j = var_index.get(id(r[1]))
                if j is None:
                    j = var_index[id(r[1])] = len(self.vars)
                    self.vars.append(r[1])
                    self.var_vals.append(r[2])
                return ("v", j)
            self.consts.append(r[1])
            return ("c", len(self.consts) - 1)

        self.wiring = tuple(tuple(number(r) for r in n.inputs) for n in self.nodes)
        self.heads = tuple(number(r) for r in head_refs)
        # loss heads read no head gradient (ones, as the symbolic executor gives them)
        self.loss_heads = tuple(h[0] == "n" and self.nodes[h[1]].op is not None and bool(self.nodes[h[1]].op.is_loss)
                                for h in self.heads)
        self._key = False

    @property
    def cacheable(self) -> bool:
        return all(n.sig is not None for n in self.nodes)

    @property
    def key(self):
        """The replay's structure (None where a node holds Python state), computed once."""
        if self._key is False:
            sigs = tuple(n.sig for n in self.nodes)
            self._key = (sigs, self.wiring, self.heads, self.loss_heads, _avals(self.var_vals),
                         _avals(self.consts)) if self.cacheable else None
        return self._key

    def replay_fn(self):
        fns, wiring, heads = tuple(n.fn for n in self.nodes), self.wiring, self.heads
        kinds = tuple(n.kind for n in self.nodes)

        def replay(var_vals, consts):
            vals: dict = {}

            def get(r):
                return vals[(r[1], r[2])] if r[0] == "n" else var_vals[r[1]] if r[0] == "v" else consts[r[1]]
            for i, (fn, refs) in enumerate(zip(fns, wiring)):
                try:
                    outs = fn([get(r) for r in refs])
                except MXNetError:
                    raise
                except Exception as e:
                    raise MXNetError(f"autograd: replaying recorded {kinds[i]} failed: {type(e).__name__}: {e}") from e
                for k, o in enumerate(outs):
                    vals[(i, k)] = o
            return [get(h) for h in heads]
        return replay


def _avals(values) -> tuple:
    return tuple((tuple(v.shape), str(v.dtype)) for v in values)


def _inexact(x) -> bool:
    return inexact(x.dtype)


_DIFFERENTIABLE: dict = {}


def _differentiable(x) -> bool:
    """Whether a variable of `x`'s dtype gets a gradient (inexact or integer), memoized."""
    got = _DIFFERENTIABLE.get(x.dtype)
    if got is None:
        got = _DIFFERENTIABLE[x.dtype] = inexact(x.dtype) or bool(jnp.issubdtype(x.dtype, jnp.integer))
    return got


def _grad_fn(tape: _Tape, diff: tuple, given: tuple, add: tuple):
    """f(var_vals, consts, head_grads, old_grads) -> gradients of the variables `diff`.
    `given[h]`: head h has a head gradient (else ones); `add[i]`: add old_grads[i].

    Integer variables are differentiated as float32 copies of themselves (MXNet computes
    their gradients with its integer kernels: slice, take, topk ... give the same numbers);
    the caller casts their gradients back."""
    from ..symbol.lower import matmul_precision
    replay, loss_heads = tape.replay_fn(), tape.loss_heads

    def run(var_vals, consts, head_grads, old_grads):
        def f(xs):
            full = list(var_vals)
            for j, x in zip(diff, xs):
                full[j] = x
            return replay(full, consts)
        with jax.default_matmul_precision(matmul_precision()):
            outs, vjp = jax.vjp(f, [var_vals[j] if _inexact(var_vals[j]) else var_vals[j].astype(jnp.float32)
                                    for j in diff])
            it, cot = iter(head_grads), []
            for o, has, loss in zip(outs, given, loss_heads):
                g = next(it) if has else None
                g = None if loss else g
                if not _inexact(o):
                    cot.append(np.zeros(o.shape, jax.dtypes.float0))
                else:
                    cot.append(jnp.ones_like(o) if g is None else jnp.broadcast_to(g.astype(o.dtype), o.shape))
            (grads,) = vjp(cot)
        old = iter(old_grads)
        return [g + next(old).astype(g.dtype) if a else g for g, a in zip(grads, add)]
    return run


def _compiled(tape: _Tape, diff, given, add):
    """The replay: f(var_vals, consts, head_grads, old_grads) -> gradients."""
    if not tape.cacheable:
        return _grad_fn(tape, diff, given, add)
    key = (tape.key, diff, given, add)
    fn = _COMPILED.get(key)
    if fn is None:
        fn = _COMPILED.put(key, small_jit(_grad_fn(tape, diff, given, add)))
    return fn


def _pulled(tape: _Tape, diff, given, add):
    """The walk over saved residuals: f(saved, head_grads, old_grads) -> gradients."""
    from ..symbol.lower import matmul_precision
    key = _pullback.key_of(tape)
    if key is not None:
        key = ("pull", key, diff, given, add)
        fn = _COMPILED.get(key)
        if fn is not None:
            return fn
    run = _pullback.grad_fn(tape, diff, given, add, jit_pulls=key is None)

    def walk(saved, head_grads, old_grads):
        with jax.default_matmul_precision(matmul_precision()):
            return run(saved, head_grads, old_grads)
    return walk if key is None else _COMPILED.put(key, small_jit(walk))


def _gradients(tape: _Tape, diff, given, add, head_grads, old_grads, replay: bool) -> list:
    """The gradients of the variables `diff` (indices into tape.vars): from the saved
    residuals, or (`replay`, or an integer variable among them) by replaying the tape."""
    if replay or not all(_inexact(tape.var_vals[j]) for j in diff):
        return _compiled(tape, diff, given, add)(tape.var_vals, tape.consts, head_grads, old_grads)
    return _pulled(tape, diff, given, add)(_pullback.saved_of(tape), head_grads, old_grads)


def _head_groups(heads, head_grads, what) -> list:
    """[(head references, head gradients)] per device the heads live on: a tape never
    crosses devices (copies between them are not recorded), so each group is replayed as
    its own program (Gluon's `autograd.backward(losses)` over several contexts)."""
    from ..ndarray import ndarray as _ndm
    heads, _ = _as_list(heads, f"{what}: heads")
    if head_grads is None:
        head_grads = [None] * len(heads)
    else:
        head_grads, _ = _as_list(head_grads, f"{what}: head_grads")
    if len(head_grads) != len(heads):
        raise MXNetError(f"{what}: {len(heads)} heads but {len(head_grads)} head gradients")
    groups: dict = {}
    for k, (h, g) in enumerate(zip(heads, head_grads)):
        if not isinstance(h, _ndm.NDArray):
            raise MXNetError(f"{what}: head {k} is a {type(h).__name__}, not an NDArray")
        ag = getattr(h, "_ag", None)
        if ag is None:
            raise MXNetError(f"{what}: head {k} of shape {h.shape}: {_NOT_RECORDED}")
        if g is not None and not isinstance(g, _ndm.NDArray):
            raise MXNetError(f"{what}: head gradient {k} must be an NDArray or None, got {type(g).__name__}")
        if g is not None and g.shape != h.shape:
            raise MXNetError(f"{what}: head gradient {k} has shape {g.shape}, its head {h.shape}")
        refs, grads = groups.setdefault(frozenset(h._data.devices()), ([], []))
        refs.append(("v", ag, h._data) if isinstance(ag, Var) else ("n", ag[0], ag[1]))
        grads.append(g)
    return list(groups.values())


def _as_dtype(g, dtype):
    """`g` as a (strongly typed) array of `dtype`; `g` itself where it is one already, with
    no eager dispatch."""
    if g.dtype == dtype and not getattr(g, "weak_type", False):
        return g
    return g.astype(dtype)


def _free(tape: _Tape) -> None:
    """Free the graph, as MXNet does after a backward without retain_graph: the nodes
    drop their inputs (the arrays they captured) and refuse another backward."""
    for n in tape.nodes:
        n.free()


def backward(heads, head_grads=None, retain_graph=False, train_mode=True) -> None:  # noqa: ARG001
    """Compute the gradients of `heads` with respect to every marked variable they
    depend on and write (grad_req 'write') or add ('add') them into the variables'
    gradient arrays.

    Args:
        heads: an NDArray or a list of NDArrays computed under `record()`.
        head_grads: gradients of the heads (None, or a list with None entries: ones).
        retain_graph: keep the graph for another backward; by default it is freed.
        train_mode: accepted for MXNet's signature; the recorded ops replay in the mode
            they were recorded in (so Dropout uses the mask it drew).
    """
    work = []
    for refs, head_grads in _head_groups(heads, head_grads, "backward"):
        tape = _Tape(refs)
        diff = tuple(j for j, v in enumerate(tape.vars) if v.req != "null" and _differentiable(tape.var_vals[j]))
        work.append((tape, diff, head_grads))
    if not any(diff for _, diff, _ in work):
        raise MXNetError("backward: there are no inputs in the computation graph that require gradients; "
                         "mark some with attach_grad() or mark_variables() before recording")
    for tape, diff, head_grads in work:
        if not diff:
            continue
        add = tuple(tape.vars[j].req == "add" for j in diff)
        grads = _gradients(tape, diff, tuple(g is not None for g in head_grads), add,
                           [g._data for g in head_grads if g is not None],
                           [tape.vars[j].grad._data for j, a in zip(diff, add) if a], replay=False)
        for j, g in zip(diff, grads):
            var = tape.vars[j]
            var.grad._data = _as_dtype(g, var.grad._data.dtype)
            var.fresh = True
    if not retain_graph:
        for tape, _, _ in work:
            _free(tape)


def grad(heads, variables, head_grads=None, retain_graph=None, create_graph=False, train_mode=True):  # noqa: ARG001
    """The gradients of `heads` with respect to `variables`, returned as new arrays (the
    variables' own gradient arrays are not touched).

    Args:
        heads: an NDArray or a list of NDArrays computed under `record()`.
        variables: an NDArray or a list of them, each marked (attach_grad / mark_variables).
        head_grads: as in `backward`.
        retain_graph: keep the graph; default: the value of `create_graph`.
        create_graph: record the gradient computation too, so that the returned arrays can
            be differentiated again (higher-order gradients).
        train_mode: accepted for MXNet's signature (see `backward`).

    Returns:
        A list of NDArrays, one per variable, also when `variables` is one NDArray (MXNet
        1.9.1 returns a list either way: `autograd.grad(y, x)[0]`).
    """
    from ..ndarray import ndarray as _ndm
    groups = [(_Tape(refs), hg) for refs, hg in _head_groups(heads, head_grads, "grad")]
    variables, _ = _as_list(variables, "grad: variables")
    wheres = [{id(v): j for j, v in enumerate(tape.vars)} for tape, _ in groups]
    asked = [[] for _ in groups]  # per group: (position in `variables`, variable index in its tape)
    for k, v in enumerate(variables):
        ag = getattr(v, "_ag", None)
        if not isinstance(ag, Var):
            raise MXNetError(f"grad: variable {k} (shape {getattr(v, 'shape', None)}) is not marked; call "
                             "attach_grad() on it (or mark_variables) before recording")
        t = next((t for t, w in enumerate(wheres) if id(ag) in w), None)
        if t is None:
            raise MXNetError(f"grad: variable {k} (shape {v.shape}) is not an input of the heads' graph")
        j = wheres[t][id(ag)]
        if not _differentiable(groups[t][0].var_vals[j]):
            raise MXNetError(f"grad: variable {k} has dtype {v.dtype.__name__}; only numeric variables "
                             "have gradients")
        asked[t].append((k, j))
    out = [None] * len(variables)
    for (tape, head_grads), pairs in zip(groups, asked):
        if not pairs:
            continue
        diff, given = tuple(j for _, j in pairs), tuple(g is not None for g in head_grads)
        hg = [g._data for g in head_grads if g is not None]
        grads = _gradients(tape, diff, given, (False,) * len(diff), hg, [], replay=create_graph)
        res = [_ndm.NDArray(g.astype(tape.var_vals[j].dtype)) for j, g in zip(diff, grads)]
        for (k, _), r in zip(pairs, res):
            out[k] = r
        if create_graph:
            _record_grad(tape, _compiled(tape, diff, given, (False,) * len(diff)), diff, given, head_grads, res)
    if not (create_graph if retain_graph is None else retain_graph):
        for tape, _ in groups:
            _free(tape)
    return out


def _record_grad(tape: _Tape, fn, diff, given, head_grads, out) -> None:
    """Put the gradient computation on the tape as one node of the variables, constants
    and head gradients, so its results can be differentiated again."""
    from ._tape import ref_of
    nv, nc = len(tape.vars), len(tape.consts)

    def grad_node(ins):
        return fn(list(ins[:nv]), list(ins[nv:nv + nc]), list(ins[nv + nc:]), [])
    inputs = [("v", v, x) for v, x in zip(tape.vars, tape.var_vals)] + [("c", c) for c in tape.consts]
    inputs += [ref_of(g, g._data) for g in head_grads if g is not None]
    vals = list(tape.var_vals) + list(tape.consts) + [g._data for g in head_grads if g is not None]
    sig = ("grad", tape.key, diff, given) if tape.cacheable else None
    node = Node(grad_node, sig, inputs, len(out), kind="gradient (create_graph=True)", vals=vals,
                outs=[o._data for o in out])
    for k, o in enumerate(out):
        o._ag = (node, k)
