"""A hybridized block's traced graph and its compiled calls.

`trace` runs `hybrid_forward` once with `F = mx.sym`: inputs are Variables named 'data'
(or 'data0', 'data1', ... for several), parameters are their `Parameter.var()`. The
traced Symbol keeps MXNet's names (it is what `export` writes).

`CachedGraph` runs it: the graph is copied once with its parameter variables renamed
by position (`_p0`, `_p1`, ...), so two instances of one architecture (whose parameter
names differ: dense0_weight, dense1_weight) share a fingerprint, and jbind's compile
cache compiles their executable once. One Executor is kept per (context, input shapes,
dtypes); its argument handles are the block's own slots, pointed at the parameters'
current arrays on every call, so `set_data`, `load_parameters` and re-initialization
are seen without rebinding.

Training: when `mx.autograd` (if jbind has it) says a training pass is on, the call runs
the graph in training mode as one compiled function (batch statistics, dropout), writes
the new aux states (BatchNorm's running statistics) into the parameters, and, while
recording, hands `autograd.record_call` the pure function of (inputs, parameters, aux
states, random key) that produced the outputs, with a structural signature, so that
`backward()` differentiates the whole block as one node. When some of those inputs are
in autograd's graph, the compiled function recorded is the forward with its `jax.vjp`
(`_TrainVjp`), which also returns the pullback's residuals: backward applies the
pullback to them instead of running the block's forward a second time.
"""
from __future__ import annotations

import dataclasses
import warnings
from collections import OrderedDict

import jax
import numpy as np
from jax.sharding import SingleDeviceSharding

from .. import random as _random
from .. import symbol as sym_mod
from .._memo import Memo
from ..autograd._saved import Pullback
from ..autograd._tape import recorded_inputs
from ..compile import store
from ..compile._options import compile_lowered
from ..compile.cache import CACHE, CacheKey
from ..executor.bind import bind
from ..symbol.graph import graph_of
from ..symbol.infer import SHAPE, entry_values
from ..symbol.lower import make_forward
from ..ndarray.ndarray import NDArray
from ..symbol._node import Node, topo_order
from ..symbol.symbol import Symbol
from . import _inline, _op_hook
from ._util import check, flatten, regroup
from .parameter import DeferredInitializationError

_MAX_EXECUTORS = 64   # per block: input shapes seen; older ones are dropped (the compile cache keeps theirs)


def trace(block, args):
    """((input variables, output Symbol group), input format, output format) of `block`
    called on `args` (NDArrays or Symbols; only their structure matters)."""
    flat, in_fmt = flatten(args, "input")
    names = ["data"] if len(flat) == 1 else [f"data{i}" for i in range(len(flat))]
    inputs = [sym_mod.var(n) for n in names]
    given = [None if a is None else v for a, v in zip(flat, inputs)]
    grouped = regroup(given, in_fmt)
    params = {k: v.var() for k, v in block._reg_params.items()}
    with block.name_scope():
        out = block.hybrid_forward(sym_mod, *grouped, **params)
    outs, out_fmt = flatten(out, "output")
    return (inputs, sym_mod.Group(outs)), in_fmt, out_fmt


def canonical(out: Symbol, keep: set) -> Symbol:
    """`out` with every variable not in `keep` renamed by position and stripped of its
    attributes (a cast parameter's array, not its traced hint, gives its dtype): the
    structure a compile is keyed by."""
    copied: dict[int, Node] = {}
    k = 0
    for n in topo_order(out._heads):
        if n.op is None:
            if n.name in keep:
                copied[id(n)] = n
            else:
                copied[id(n)] = Node(None, f"_p{k}", {}, ())  # shapes and dtypes come from the arrays
                k += 1
            continue
        ins = tuple((copied[id(c)], i) for c, i in n.inputs)
        copied[id(n)] = Node(n.op, n.name, dict(n.attrs), ins)
    return Symbol([(copied[id(n)], i) for n, i in out._heads])


_AUTOGRAD = []   # [module or None], looked up once: a failed import each call would search sys.path


def autograd_module():
    """`jbind.autograd`, or None where jbind has none."""
    if not _AUTOGRAD:
        try:
            from .. import autograd
        except ImportError:
            autograd = None
        _AUTOGRAD.append(autograd)
    return _AUTOGRAD[0]


class CachedGraph:
    """Runs a block's traced graph on NDArrays through a cached Executor per input signature."""

    def __init__(self, block, inputs, out: Symbol, none_inputs=()):
        self._block = block
        data_idx = {v.name: i for i, v in enumerate(inputs) if i not in none_inputs}
        params = block.collect_params()
        expected = out.list_inputs()
        for name in expected:
            check(name in params or name in data_idx, f"Unknown input to HybridBlock: {name}")
        unused = [f"{i}-th" for n, i in data_idx.items() if n not in expected]
        if unused:
            warnings.warn(f"The {', '.join(unused)} input to HybridBlock is not used by any computation. Is this "
                          "intended?", stacklevel=4)
        unused = [n for n in params.keys() if n not in expected]
        if unused:
            warnings.warn(f"Parameter {', '.join(unused)} is not used by any computation. Is this intended?",
                          stacklevel=4)

        def source(n):
            return (True, data_idx[n]) if n in data_idx else (False, params[n])
        self._args = [source(n) for n in out.list_arguments()]
        self._aux = [source(n) for n in out.list_auxiliary_states()]
        self._symbol = canonical(out, set(data_idx))
        # whether a training call draws random numbers (Dropout): else it uses no generator
        self._draws = any(n.op is not None and n.op.random for n in topo_order(self._symbol._heads))
        self._exes: OrderedDict = OrderedDict()
        self.op_hook = None   # (callback, monitor_all) of `register_op_hook`, set before the first call
        self._train_fns: OrderedDict = OrderedDict()

    def _arrays(self, flat, ctx):
        def get(src):
            is_data, s = src
            return flat[s] if is_data else s.data(ctx)
        return [get(s) for s in self._args], [get(s) for s in self._aux]

    def __call__(self, args, out_fmt):
        flat, _ = flatten(args, "input")
        ctx = next(a for a in flat if isinstance(a, NDArray)).context
        try:
            arg_arrays, aux_arrays = self._arrays(flat, ctx)
        except DeferredInitializationError:
            self._block._deferred_infer_shape(*args)
            for _, p in self._args + self._aux:
                if not isinstance(p, int):
                    p._finish_deferred_init()
            arg_arrays, aux_arrays = self._arrays(flat, ctx)
        for i, a in enumerate(arg_arrays):
            if not isinstance(a, NDArray):
                raise TypeError(f"HybridBlock input {i} must be an NDArray, got {type(a).__name__}")
        key = (ctx, tuple((d.shape, d.dtype) for d in (a._data for a in arg_arrays + aux_arrays)))
        ag = autograd_module()
        if ag is not None and ag.is_training():
            outs = self._train_call(ag, key, ctx, arg_arrays, aux_arrays)
            _inline.describe(outs, self)
        else:
            outs = [NDArray(o._data) for o in self._executor(key, ctx, arg_arrays, aux_arrays).forward()]
        return regroup(outs, out_fmt)

    def _executor(self, key, ctx, arg_arrays, aux_arrays):
        """The inference Executor for this signature, its slots pointed at the current arrays."""
        exe = self._exes.get(key)
        if exe is None:
            exe = bind(self._symbol, ctx, args=[NDArray(a._data) for a in arg_arrays],
                       aux_states=[NDArray(a._data) for a in aux_arrays], grad_req="null")
            if self.op_hook is not None:
                _op_hook.install(exe, self._symbol, self.op_hook)
            self._exes[key] = exe
            while len(self._exes) > _MAX_EXECUTORS:
                self._exes.popitem(last=False)
            return exe
        self._exes.move_to_end(key)
        for slot, a in zip(exe.arg_arrays, arg_arrays):
            slot._data = a._data
        for slot, a in zip(exe.aux_arrays, aux_arrays):
            slot._data = a._data
        return exe

    def _train_fn(self, key, ctx, arg_arrays, aux_arrays):
        """The training forward of this signature: a `_Train` (its pure function, signature,
        and, built on first use, its compiled forward and its residual-keeping variant)."""
        got = self._train_fns.get(key)
        if got is not None:
            self._train_fns.move_to_end(key)
            return got
        g = graph_of(self._symbol)
        names = g.arg_names + g.aux_names
        arrays = arg_arrays + aux_arrays
        shapes = tuple((n, tuple(a.shape)) for n, a in zip(names, arrays))
        dtypes = tuple((n, np.dtype(a._data.dtype).name) for n, a in zip(names, arrays))
        forward = make_forward(g, entry_values(self._symbol, SHAPE, dict(shapes[:len(g.arg_names)])))
        ck = CacheKey(self._symbol.fingerprint, shapes, dtypes, (), "gluon_train", (str(ctx.jax_device),))
        got = self._train_fns[key] = _Train(forward, ck, ctx, arg_arrays, aux_arrays, self._draws)
        while len(self._train_fns) > _MAX_EXECUTORS:
            self._train_fns.popitem(last=False)
        return got

    def _train_call(self, ag, key, ctx, arg_arrays, aux_arrays) -> list:
        train = self._train_fn(key, ctx, arg_arrays, aux_arrays)
        kdata = train.key_data()
        args, aux = tuple(a._data for a in arg_arrays), tuple(a._data for a in aux_arrays)
        recording = ag.is_recording()
        inputs = list(arg_arrays) + list(aux_arrays) + [kdata]
        datas = list(args) + list(aux) + [kdata]
        diff = recorded_inputs(inputs, datas) if recording else ()
        if diff:  # the forward also keeps its pullback's residuals: backward does not run it again
            vjp = train.vjp(diff)
            outs, new_aux, own = vjp.fn(args, aux, kdata)
        else:
            outs, new_aux = train.compiled()(args, aux, kdata)
        results = [NDArray(o) for o in outs]
        if recording:
            record_call = getattr(ag, "record_call", None) or ag._tape.record_call  # in autograd's tape module
            if diff:
                record_call(train.pure, train.sig, inputs, results, "HybridBlock",
                            saved=(vjp, vjp.residuals(datas, outs, own)), diff=diff)
            else:
                record_call(train.pure, train.sig, inputs, results, "HybridBlock")
        for (is_data, _), held, new in zip(self._aux, aux_arrays, new_aux):
            if not is_data:  # running statistics move as in MXNet's training forward
                held._data = new
        return results


def _fold_in(base, counter):
    return jax.random.key_data(jax.random.fold_in(jax.random.wrap_key_data(base), counter))


_FOLDS: dict = {}   # device -> `_fold_in` jitted to put its result there
_ZERO_KEYS: dict = {}   # device -> uint32[2] zeros there: the key of a graph that draws nothing


def key_data(draws: bool, device):
    """The random key data (uint32[2], on `device`) of one training call: the current
    context's generator's next draw (one compiled call, not the handful of eager dispatches
    `fold_in` on key objects costs, placed on `device` by that call), or, for a graph
    without random ops (`draws` False), a constant: such a call draws nothing, as its ops
    run one by one would not."""
    if not draws:
        got = _ZERO_KEYS.get(device)
        if got is None:
            got = _ZERO_KEYS[device] = jax.device_put(np.zeros(2, np.uint32), device)
        return got
    fold = _FOLDS.get(device)
    if fold is None:
        fold = _FOLDS[device] = jax.jit(_fold_in, out_shardings=SingleDeviceSharding(device))
    base, counter = _random.next_draw()
    return fold(base, counter)


_VJPS = Memo(256)   # (CacheKey, differentiated inputs) -> _TrainVjp, shared by blocks of one architecture


class _Train:
    """One signature's training forward: `pure(values) -> outputs` (what autograd
    differentiates where nothing was kept), its structural `sig`, the compiled forward
    (through jbind's compile cache) and, for recorded calls, `vjp(diff)`."""

    def __init__(self, forward, ck, ctx, arg_arrays, aux_arrays, draws: bool = True):
        self.forward, self.ck, self.sig = forward, ck, ("gluon", ck)
        self.n_args = n_args = len(arg_arrays)
        n_aux = len(aux_arrays)
        self._specs = [tuple(jax.ShapeDtypeStruct(a.shape, a._data.dtype, sharding=SingleDeviceSharding(ctx.jax_device))
                             for a in group) for group in (arg_arrays, aux_arrays)]
        self._device = ctx.jax_device
        self._compiled = None
        self._vjps: dict = {}   # diff -> _TrainVjp
        self._draws = draws

        def pure(vals):
            outs, _ = forward(tuple(vals[:n_args]), tuple(vals[n_args:n_args + n_aux]),
                              jax.random.wrap_key_data(vals[-1]), True)
            return list(outs)
        self.pure = pure

    def _build(self, name: str, fn):
        """`fn(args, aux, key data)` compiled for this signature."""
        kspec = jax.ShapeDtypeStruct((2,), np.uint32, sharding=SingleDeviceSharding(self._device))
        return compile_lowered(jax.jit(store.named(fn, name)).lower(*self._specs, kspec), runs_often=True)

    def compiled(self):
        """The training forward: (args, aux, key data) -> (outputs, new aux)."""
        if self._compiled is None:
            forward = self.forward

            def jbind_gluon_train(args, aux, key):
                return forward(args, aux, jax.random.wrap_key_data(key), True)
            self._compiled = CACHE.get(self.ck, lambda: self._build("jbind_gluon_train", jbind_gluon_train))
        return self._compiled

    def key_data(self):
        """The random key data of one call of this signature (see `key_data`)."""
        return key_data(self._draws, self._device)

    def vjp(self, diff: tuple) -> "_TrainVjp":
        """The training forward that also returns the residuals of its `jax.vjp` with
        respect to the inputs `diff` (a `_TrainVjp`, shared by blocks of one architecture)."""
        got = self._vjps.get(diff)
        if got is not None:
            return got
        got = _VJPS.get((self.ck, diff))
        if got is None:
            names = [n for n, _ in self.ck.shapes]
            ck = dataclasses.replace(self.ck, grad_req=tuple((names[j], "write") for j in diff),
                                     mode="gluon_train_vjp")
            got = _VJPS.put((self.ck, diff), _TrainVjp(self, ck, diff))
        if len(self._vjps) > 16:
            self._vjps.clear()
        self._vjps[diff] = got
        return got


class _TrainVjp(Pullback):
    """The training forward compiled with its `jax.vjp` with respect to the inputs `diff`
    (parameters and inputs in autograd's graph): `fn(args, aux, key data)` -> (outputs,
    new aux, residuals), through jbind's compile cache."""
    __slots__ = ("fn",)

    def __init__(self, train: _Train, ck, diff: tuple):
        super().__init__()
        forward, n_args = train.forward, train.n_args

        def jbind_gluon_train_vjp(args, aux, kdata):
            def f(*full):
                outs, new_aux = forward(tuple(full[:n_args]), tuple(full[n_args:-1]),
                                        jax.random.wrap_key_data(full[-1]), True)
                return tuple(outs), tuple(new_aux)
            return self.vjp(f, list(args) + list(aux) + [kdata], diff)
        self.fn = CACHE.get(ck, lambda: train._build("jbind_gluon_train_vjp", jbind_gluon_train_vjp))
        if self.tree is None:  # compiled before (another instance, or loaded from a file): the
            # residuals' layout comes from tracing, which is the same each time
            jax.jit(jbind_gluon_train_vjp).trace(*train._specs, jax.ShapeDtypeStruct((2,), np.uint32))
