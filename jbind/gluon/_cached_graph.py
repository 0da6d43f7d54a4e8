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
`backward()` differentiates the whole block as one node.
"""
from __future__ import annotations

import warnings
from collections import OrderedDict

import jax
import numpy as np
from jax.sharding import SingleDeviceSharding

from .. import random as _random
from .. import symbol as sym_mod
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


def _autograd_flag(name: str) -> bool:
    """`mx.autograd.<name>()`, or False where jbind has no autograd."""
    fn = getattr(autograd_module(), name, None)
    return bool(fn()) if fn is not None else False


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
        self._exes: OrderedDict = OrderedDict()
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
        key = (ctx, tuple((a.shape, a._data.dtype) for a in arg_arrays + aux_arrays))
        if _autograd_flag("is_training"):
            outs = self._train_call(key, ctx, arg_arrays, aux_arrays)
        else:
            outs = [NDArray(o._data) for o in self._executor(key, ctx, arg_arrays, aux_arrays).forward()]
        return regroup(outs, out_fmt)

    def _executor(self, key, ctx, arg_arrays, aux_arrays):
        """The inference Executor for this signature, its slots pointed at the current arrays."""
        exe = self._exes.get(key)
        if exe is None:
            exe = bind(self._symbol, ctx, args=[NDArray(a._data) for a in arg_arrays],
                       aux_states=[NDArray(a._data) for a in aux_arrays], grad_req="null")
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
        """(compiled training forward, its pure function, its signature) for this signature."""
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
        n_args, n_aux = len(arg_arrays), len(aux_arrays)

        def pure(vals):  # what autograd differentiates: outputs of (args, aux, key data)
            outs, _ = forward(tuple(vals[:n_args]), tuple(vals[n_args:n_args + n_aux]),
                              jax.random.wrap_key_data(vals[-1]), True)
            return list(outs)

        def build():
            dev = SingleDeviceSharding(ctx.jax_device)

            def jbind_gluon_train(args, aux, key):
                return forward(args, aux, jax.random.wrap_key_data(key), True)
            specs = [tuple(jax.ShapeDtypeStruct(a.shape, a._data.dtype, sharding=dev) for a in group)
                     for group in (arg_arrays, aux_arrays)]
            kspec = jax.ShapeDtypeStruct((2,), np.uint32, sharding=dev)
            return compile_lowered(jax.jit(store.named(jbind_gluon_train, "jbind_gluon_train")).lower(*specs, kspec))
        ck = CacheKey(self._symbol.fingerprint, shapes, dtypes, (), "gluon_train", (str(ctx.jax_device),))
        got = self._train_fns[key] = (CACHE.get(ck, build), pure, ("gluon", ck))
        while len(self._train_fns) > _MAX_EXECUTORS:
            self._train_fns.popitem(last=False)
        return got

    def _train_call(self, key, ctx, arg_arrays, aux_arrays) -> list:
        fn, pure, sig = self._train_fn(key, ctx, arg_arrays, aux_arrays)
        k = jax.random.fold_in(jax.random.wrap_key_data(_random.base_key()), _random.next_counter())
        kdata = jax.device_put(jax.random.key_data(k), ctx.jax_device)
        outs, new_aux = fn(tuple(a._data for a in arg_arrays), tuple(a._data for a in aux_arrays), kdata)
        results = [NDArray(o) for o in outs]
        if _autograd_flag("is_recording"):
            ag = autograd_module()  # record_call lives in autograd's tape module
            record_call = getattr(ag, "record_call", None) or ag._tape.record_call
            record_call(pure, sig, list(arg_arrays) + list(aux_arrays) + [kdata], results,
                                 "HybridBlock")
        for (is_data, _), held, new in zip(self._aux, aux_arrays, new_aux):
            if not is_data:  # running statistics move as in MXNet's training forward
                held._data = new
        return results
