"""What `amp.init` does to `mx.sym` and `mx.nd`: replace the function of each listed op by
one that casts its inputs (MXNet patches its generated op functions the same way).

The functions are replaced where scripts look them up: the package (`mx.sym.FullyConnected`,
`mx.sym._contrib_ctc_loss`) and the prefixed namespace (`mx.sym.contrib.ctc_loss`).
Python operators on Symbols (`a + b`) get the same casts; on NDArrays they follow JAX's
dtype promotion, and fluent methods (`x.exp()`) are not wrapped.
"""
from __future__ import annotations

import logging

import numpy as np

from ... import _namespaces
from ...ndarray.ndarray import NDArray
from ...symbol.symbol import Symbol

_AMP_FLOATS = ("float16", "bfloat16", "float32")
_PATCHED: list = []  # (module, name, original): what `restore` puts back


def _places(module, name):
    """(module, attribute) pairs holding the function of op `name` in package `module`."""
    out = [(module, name)] if hasattr(module, name) else []
    for sub, prefix in _namespaces.PREFIXES.items():
        if name.startswith(prefix):
            ns = getattr(module, sub, None)
            short = name[len(prefix):]
            if ns is not None and hasattr(ns, short):
                out.append((ns, short))
    return out


def _patch(module, name, make):
    for holder, attr in _places(module, name):
        original = getattr(holder, attr)
        new = make(original)
        new.__name__, new.__doc__ = getattr(original, "__name__", attr), original.__doc__
        _PATCHED.append((holder, attr, original))
        setattr(holder, attr, new)


def restore():
    """Put back every function `init` replaced (jbind's own tests use it; MXNet has none)."""
    while _PATCHED:
        holder, attr, original = _PATCHED.pop()
        setattr(holder, attr, original)


def _cast(x, dtype, nd_amp_cast, sym_amp_cast):
    if isinstance(x, Symbol):
        return sym_amp_cast(x, dtype=dtype)
    if isinstance(x, NDArray) and x.dtype != dtype and np.dtype(x.dtype).name in _AMP_FLOATS:
        return nd_amp_cast(x, dtype=dtype)
    return x


def wrap(module, symbolic: bool, target, target_ops, conditional, fp32_ops, widest, keep_fp32: dict):
    """Wrap the op functions of `module` (`jbind.symbol` or `jbind.ndarray`)."""
    nd_cast = sym_cast = getattr(module, "amp_cast")

    def cast(x, dtype):
        return _cast(x, dtype, nd_cast, sym_cast)

    def casting(dtype, cond=None, keep=()):
        def make(f):
            if symbolic:
                def g(*args, **kwargs):
                    if cond is not None and kwargs.get(cond[0]) not in cond[1]:
                        return f(*args, **kwargs)
                    return _recast_symbol(f(*args, **kwargs), lambda s: cast(s, dtype), keep)
            else:
                def g(*args, **kwargs):
                    if cond is not None and kwargs.get(cond[0]) not in cond[1]:
                        return f(*args, **kwargs)
                    args = [a if i and keep else cast(a, dtype) for i, a in enumerate(args)]
                    kwargs = {k: v if k in keep else cast(v, dtype) for k, v in kwargs.items()}
                    return f(*args, **kwargs)
            return g
        return make

    for name in target_ops:
        _patch(module, name, casting(target, keep=keep_fp32.get(name, ())))
    for name in fp32_ops:
        _patch(module, name, casting(np.dtype(np.float32)))
    for name, param, values in conditional:
        _patch(module, name, casting(np.dtype(np.float32), cond=(param, list(values))))
    for name in widest:
        _patch(module, name, lambda f: _widest(f, target, module))
    if symbolic:
        _wrap_symbol_operators(module, target, target_ops, fp32_ops, widest, cast)


def _wrap_symbol_operators(module, target, target_ops, fp32_ops, widest, cast):
    """`a + b`, `a ** 2`, `a == b` on Symbols: MXNet's operators call the (wrapped) op
    functions, so they get the same casts."""
    from ...ops._base import ALIASES
    canon = lambda names: {ALIASES.get(n, n) for n in names}  # noqa: E731
    low, f32, wide = canon(target_ops), canon(fp32_ops), canon(widest)
    f32_t = np.dtype(np.float32)

    def after(sym, op):
        if op in low:
            return _recast_symbol(sym, lambda s: cast(s, target), ())
        if op in f32:
            return _recast_symbol(sym, lambda s: cast(s, f32_t), ())
        return sym

    def two_inputs(original):
        def g(self, other, op, *rest):
            if isinstance(other, Symbol) and op in wide:
                self, other = module.amp_multicast(self, other, num_outputs=2)
            out = original(self, other, op, *rest)
            if out is NotImplemented or not isinstance(out, Symbol):
                return out
            return after(out, out._heads[0][0].op.name)
        return g

    def one_input(original):
        def g(self, other, scalar_op):
            out = original(self, other, scalar_op)
            return out if out is NotImplemented else after(out, scalar_op)
        return g

    for attr, make in (("_binary", two_inputs), ("_compare", two_inputs), ("_rscalar", one_input)):
        original = getattr(Symbol, attr)
        _PATCHED.append((Symbol, attr, original))
        setattr(Symbol, attr, make(original))


def _recast_symbol(sym: Symbol, cast, keep):
    """`sym`'s one op node again, with its argument inputs (not aux states, nor those named
    in `keep`) cast, under the same name (MXNet rebuilds the node the same way)."""
    from ...symbol._node import Node
    node = sym._heads[0][0]
    if node.op is None:
        return sym
    names = node.op.arguments()
    ins = []
    for k, e in enumerate(node.inputs):
        if k >= node.num_args() or names[k] in keep:
            ins.append(e)
        else:
            ins.append(cast(Symbol([e]))._heads[0])
    new = Node(node.op, node.name, dict(node.attrs), tuple(ins))
    return Symbol([(new, i) for _, i in sym._heads])


def _widest(f, target, module):
    def g(*args, **kwargs):
        args = list(args)
        slots = [(args, i) for i, a in enumerate(args) if isinstance(a, (Symbol, NDArray))]
        slots += [(kwargs, k) for k, v in kwargs.items() if isinstance(v, (Symbol, NDArray))]
        values = [c[k] for c, k in slots]
        if any(isinstance(v, Symbol) for v in values):
            cast = module.amp_multicast(*values, num_outputs=len(values))
            for (c, k), i in zip(slots, range(len(values))):
                c[k] = cast[i]
        else:
            wide = np.dtype(np.float32) if any(v.dtype == np.float32 for v in values) else target
            for c, k in slots:
                if c[k].dtype != wide and c[k].dtype == target:
                    c[k] = module.amp_cast(c[k], dtype=wide)
        return f(*args, **kwargs)
    return g


def wrap_loss_outputs(module, symbolic: bool, scaler, names):
    """mx.nd's loss heads multiply `grad_scale` by the loss scale; mx.sym's only warn, as
    MXNet's: dynamic loss scaling does not reach symbolic graphs."""
    def make(f):
        if symbolic:
            def g(*args, **kwargs):
                logging.warning("%s does not support dynamic loss scaling in symbolic and hybridized execution.",
                                getattr(f, "__name__", "this op"))
                return f(*args, **kwargs)
        else:
            def g(*args, **kwargs):
                kwargs["grad_scale"] = kwargs.get("grad_scale", 1.0) * scaler.loss_scale
                return f(*args, **kwargs)
        return g
    for name in names:
        _patch(module, name, make)
