"""`Custom`: an operator written in Python (`mx.operator`), run on the host.

Its arguments, outputs and aux states and its shape and dtype rules are the registered
`CustomOpProp`'s. Its forward and backward are the `CustomOp`'s, called through
`jax.pure_callback` with jbind NDArrays on cpu(0) (so `.asnumpy()`, `mx.nd` arithmetic
and `assign` work inside them) and tied together by a `jax.custom_vjp`: the backward
callback gets the head gradients, the inputs, the outputs and fresh zero `in_grad`
arrays; arguments nobody differentiates get `req` 'null'. The aux states the forward
writes come back as the op's new aux states.

A graph holding the op compiles to an executable with Python callbacks in it, which
cannot be written to a file: lowering tells the executable store not to keep it.
"""
from __future__ import annotations

import collections
import inspect
import itertools
import threading
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import operator as _operator
from ..attribute import HIDDEN_KEYS
from .._memo import stable_hash
from ..base import DTYPE_NP_TO_MX, MXNetError, ParamError
from ._base import Op, register


class _Info(NamedTuple):
    """What the current registration of an op_type says for one set of keywords."""
    serial: int
    prop: object
    args: tuple
    outs: tuple
    aux: tuple
    is_loss: bool


class _FromProp:
    """An Op class attribute that Custom answers per op, from its Prop: generic code that
    reads it from the class (before an op exists) gets `default`."""

    def __init__(self, field: str, default):
        self.field, self.default = field, default

    def __get__(self, op, cls):
        return self.default if op is None else getattr(op._info(), self.field)


@register
class Custom(Op):
    """Apply an operator written in Python and registered with `mx.operator.register(op_type)`.

    Any other keyword is passed, as a string, to the registered CustomOpProp's `__init__`.
    """
    op_type: str
    kwargs: tuple = ()  # the Prop's keywords as ((name, string), ...), sorted by name
    mxnet_order = ("op_type",)
    aux_names = _FromProp("aux", ())
    is_loss = _FromProp("is_loss", False)  # no head gradient read: the Prop's backward dependencies

    @classmethod
    def from_attrs(cls, attrs):
        attrs = dict(attrs)
        op_type = attrs.pop("op_type", None)
        if op_type is None or str(op_type) == "":
            raise ParamError("Custom: required parameter op_type (the name a CustomOpProp was registered "
                             "under) not given")
        op = cls(str(op_type), tuple(sorted((str(k), str(v)) for k, v in attrs.items())))
        op._info()  # as MXNet, the Prop is made with the symbol: an unknown op_type or keyword fails here
        return op

    open_params = True  # every other keyword is the Prop's
    host_code = True
    imperative_jit = False  # mx.nd makes the Prop's operator anew each call, as MXNet does

    @classmethod
    def params_in(cls, attrs):
        """op_type and what the Prop's `__init__` takes: its named keywords, or with `**kwargs`
        every attribute but MXNet's hidden ones (`__x__`, and `ctx_group`, `lr_mult`, ...,
        which jbind writes plainly)."""
        if "op_type" not in attrs:
            return {}
        prop_cls, _ = _operator.registration(str(attrs["op_type"]))
        try:
            params = list(inspect.signature(prop_cls.__init__).parameters.values())[1:]
        except (TypeError, ValueError):
            params = []
        if any(p.kind == p.VAR_KEYWORD for p in params):
            return {k: v for k, v in attrs.items() if k not in HIDDEN_KEYS and not (k.startswith("__") and k.endswith("__"))}
        names = {"op_type"} | {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        return {k: v for k, v in attrs.items() if k in names}

    def _info(self) -> _Info:
        prop_cls, serial = _operator.registration(self.op_type)
        info = self.__dict__.get("_jbind_info")
        if info is None or info.serial != serial:
            info = _describe(self.op_type, dict(self.kwargs), prop_cls, serial)
            object.__setattr__(self, "_jbind_info", info)
        return info

    def hash_key(self) -> int:
        # Graphs holding the op are never stored, so the key may name this process's
        # registration: a graph built after the op_type is registered again compiles anew.
        serial = self._info().serial
        k = self.__dict__.get("_jbind_key")
        if k is None or k[0] != serial:
            k = (serial, stable_hash(repr(("Custom", self.op_type, self.kwargs, serial))))
            object.__setattr__(self, "_jbind_key", k)
        return k[1]

    def _who(self) -> str:
        return f"custom op {self.op_type!r} ({type(self._info().prop).__name__})"

    def arguments(self):
        return self._info().args

    def outputs(self):
        return self._info().outs

    # --- rules: the Prop's, checked ----------------------------------------------------
    def infer_shape(self, ins, outs):
        info = self._info()
        known = all(s is not None and all(d > 0 for d in s) for s in ins)
        given = [[int(d) for d in s] if s is not None else [] for s in ins]
        ret = self._ask(info.prop.infer_shape, "infer_shape", given, known)
        if ret is None:
            return [None] * len(info.args), [None] * len(info.outs), [None] * len(info.aux)
        return tuple([self._shape(s, what) for s, what in zip(part, names)]
                     for part, names in zip(ret, _slot_names(info)))

    def infer_type(self, ins, outs):
        info = self._info()
        given = [np.dtype(t).type if t is not None else None for t in ins]
        ret = self._ask(info.prop.infer_type, "infer_type", given, all(t is not None for t in ins))
        if ret is None:
            return [None] * len(info.args), [None] * len(info.outs), [None] * len(info.aux)
        return tuple([self._dtype(t, what) for t, what in zip(part, names)]
                     for part, names in zip(ret, _slot_names(info)))

    def _ask(self, rule, method: str, given: list, known: bool):
        """The rule's (arguments, outputs, aux states); None while an input is unknown and
        the rule cannot answer yet (user rules often index into every input's shape)."""
        try:
            ret = rule(given)
        except Exception as e:
            if not known:
                return None
            raise ValueError(f"{self._who()}: {method}({given}) raised {type(e).__name__}: {e}") from None
        info = self._info()
        if not isinstance(ret, (list, tuple)) or len(ret) not in (2, 3):
            raise ValueError(f"{self._who()}: {method} must return 2 or 3 lists (arguments, outputs"
                             f"[, aux states]), got {ret!r}")
        ret = list(ret) + [[]] * (3 - len(ret))
        for part, names, kind in zip(ret, (info.args, info.outs, info.aux), ("argument", "output", "aux state")):
            if not isinstance(part, (list, tuple)) or len(part) != len(names):
                raise ValueError(f"{self._who()}: {method} returned {part!r} for the {kind}s; expected "
                                 f"{len(names)} ({', '.join(names) or 'none'})")
        return ret

    def _shape(self, s, what: str):
        try:
            dims = tuple(int(d) for d in s)
        except (TypeError, ValueError):
            raise ValueError(f"{self._who()}: infer_shape gave {what} the shape {s!r}, not a list of ints") from None
        return tuple(max(d, 0) for d in dims) or None  # as MXNet 1.x: no dimensions means unknown

    def _dtype(self, t, what: str):
        if t is None:
            return None
        try:
            return np.dtype(t)
        except TypeError:
            raise ValueError(f"{self._who()}: infer_type gave {what} the dtype {t!r}") from None

    # --- lowering -------------------------------------------------------------------------
    def lower(self, ins, aux, is_train, key):
        from ..compile import store
        from ..context import Context
        info = self._info()
        in_s = [tuple(int(d) for d in x.shape) for x in ins]
        _, out_s, _ = self.infer_shape(in_s, [None] * len(info.outs))
        _, out_t, _ = self.infer_type([x.dtype for x in ins], [None] * len(info.outs))
        bad = [f"{n}: {s}, {t}" for n, s, t in zip(info.outs, out_s, out_t)
               if s is None or 0 in s or t is None]
        if bad:
            raise ValueError(f"{self._who()}: for inputs of shapes {in_s} the rules leave outputs unknown "
                             f"({'; '.join(bad)})")
        store.unstorable()  # the executable will call back into Python: it cannot go to a file
        in_specs = [jax.ShapeDtypeStruct(x.shape, x.dtype) for x in ins]
        aux_specs = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in aux]
        out_specs = [jax.ShapeDtypeStruct(s, t) for s, t in zip(out_s, out_t)]
        shapes = [list(s.shape) for s in in_specs + aux_specs]
        codes = [DTYPE_NP_TO_MX.get(np.dtype(s.dtype), -1) for s in in_specs + aux_specs]
        try:
            operator = info.prop.create_operator(Context("cpu", 0), shapes, codes)
        except Exception as e:
            raise ValueError(f"{self._who()}: create_operator raised {type(e).__name__}: {e}") from e
        return _host_call(operator, self._who(), bool(is_train), in_specs, out_specs, aux_specs, ins, aux)


def _describe(op_type: str, kwargs: dict, prop_cls, serial: int) -> _Info:
    who = f"custom op {op_type!r} ({prop_cls.__name__})"
    try:
        prop = prop_cls(**kwargs)
    except Exception as e:
        given = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
        raise MXNetError(f"{who}: {prop_cls.__name__}({given}) raised {type(e).__name__}: {e}") from None
    lists = []
    for method in ("list_arguments", "list_outputs", "list_auxiliary_states"):
        try:
            names = tuple(getattr(prop, method)())
        except Exception as e:
            raise MXNetError(f"{who}: {method}() raised {type(e).__name__}: {e}") from None
        if not all(isinstance(n, str) for n in names):
            raise MXNetError(f"{who}: {method}() must return names (strings), got {list(names)}")
        lists.append(names)
    args, outs, aux = lists
    if not outs:
        raise MXNetError(f"{who}: list_outputs() is empty; an op has at least one output")
    nin, nout = len(args), len(outs)
    try:
        deps = prop.declare_backward_dependency(list(range(nout)), list(range(nout, nout + nin)),
                                                list(range(nout + nin, 2 * nout + nin)))
    except Exception as e:
        raise MXNetError(f"{who}: declare_backward_dependency raised {type(e).__name__}: {e}") from None
    is_loss = not any(int(d) < nout for d in deps)
    return _Info(serial, prop, args, outs, aux, is_loss)


def _slot_names(info: _Info):
    return ([f"argument {n!r}" for n in info.args], [f"output {n!r}" for n in info.outs],
            [f"aux state {n!r}" for n in info.aux])


# --- running the Python code on the host -----------------------------------------------------
def _host_call(operator, who, is_train, in_specs, out_specs, aux_specs, ins, aux):
    """(outputs, new aux states) of `operator` on `ins` / `aux`, differentiable."""
    from jax.custom_derivatives import SymbolicZero
    nin, nout = len(in_specs), len(out_specs)
    perturbed = [False] * nin  # which arguments the gradient is asked for: set while tracing the forward

    def forward_host(*arrays):
        with _HostContext():
            in_data = [_nd(x) for x in arrays[:nin]]
            aux_data = [_nd(x) for x in arrays[nin:]]
            out_data = [_zeros(s) for s in out_specs]
            _run_user(who, "forward", operator.forward, is_train=is_train, req=["write"] * nout,
                      in_data=in_data, out_data=out_data, aux=aux_data)
            outs = [_result(who, "forward", f"output {i}", h, s) for i, (h, s) in enumerate(zip(out_data, out_specs))]
            return tuple(outs) + tuple(_result(who, "forward", f"aux state {i}", h, s)
                                       for i, (h, s) in enumerate(zip(aux_data, aux_specs)))

    def forward(xs, a):
        return tuple(jax.pure_callback(forward_host, tuple(out_specs) + tuple(aux_specs), *xs, *a,
                                       vmap_method="sequential"))

    @jax.custom_vjp
    def run(xs, a):
        return forward(xs, a)

    def run_fwd(xs, a):
        for k, p in enumerate(xs):
            perturbed[k] = bool(p.perturbed) and jnp.issubdtype(in_specs[k].dtype, jnp.inexact)
        xs, a = tuple(p.value for p in xs), tuple(p.value for p in a)
        res = forward(xs, a)
        return res, (xs, res)

    def run_bwd(saved, cts):
        xs, res = saved
        outs, new_aux = res[:nout], res[nout:]
        want = [k for k in range(nin) if perturbed[k]]
        req = ["write" if p else "null" for p in perturbed]
        none_aux = tuple(None for _ in new_aux)
        if not want:
            return tuple(None for _ in xs), none_aux
        heads = tuple(jnp.zeros(s.shape, s.dtype) if isinstance(c, SymbolicZero) or c.dtype == jax.dtypes.float0
                      else c.astype(s.dtype) for c, s in zip(cts[:nout], out_specs))

        def backward_host(*arrays):
            with _HostContext():
                groups = [arrays[:nout], arrays[nout:nout + nin], arrays[nout + nin:2 * nout + nin],
                          arrays[2 * nout + nin:]]
                out_grad, in_data, out_data, aux_data = ([_nd(x) for x in g] for g in groups)
                in_grad = [_zeros(s) for s in in_specs]
                _run_user(who, "backward", operator.backward, req=req,
                          out_grad=out_grad, in_data=in_data, out_data=out_data, in_grad=in_grad, aux=aux_data)
                return tuple(_result(who, "backward", f"in_grad {k}", in_grad[k], in_specs[k]) for k in want)

        grads = jax.pure_callback(backward_host, tuple(in_specs[k] for k in want), *heads, *xs, *outs, *new_aux,
                                  vmap_method="sequential")
        full = [None] * nin
        for k, g in zip(want, grads):
            full[k] = g
        return tuple(full), none_aux

    run.defvjp(run_fwd, run_bwd, symbolic_zeros=True)
    res = run(tuple(ins), tuple(aux))
    return list(res[:nout]), list(res[nout:])


class _HostContext:
    """The user's code runs with cpu(0), where JAX hands callbacks their arrays, as the
    current context (its `mx.nd.array(...)` lands beside them)."""

    def __enter__(self):
        from ..context import Context
        self._ctx = Context("cpu", 0)
        return self._ctx.__enter__()

    def __exit__(self, *exc):
        self._ctx.__exit__(*exc)


def _cpu0():
    return jax.local_devices(backend="cpu")[0]


def _nd(x):
    from ..ndarray.ndarray import NDArray
    return NDArray(x if isinstance(x, jax.Array) else jax.device_put(np.asarray(x), _cpu0()))


def _zeros(spec):
    from ..ndarray.ndarray import NDArray, cached_zeros
    return NDArray(cached_zeros(spec.shape, spec.dtype, _cpu0()))


# Errors the user's code raised in callbacks, by the text JAX re-raises them with (the
# callback runs on an XLA thread, not the caller's: the text is what ties the two). Several
# threads may fail at once, so each error has its own entry (a list per text); entries
# nobody claims (a callback whose caller went away) are dropped past _KEEP of them.
_FAILED: "collections.OrderedDict[str, list]" = collections.OrderedDict()
_FAILED_LOCK = threading.Lock()
_KEEP = 256
_TOKENS = itertools.count()


def _fail(error: MXNetError, original: BaseException | None = None):
    """Raise `error` out of a callback; the caller gets `original` (a KeyboardInterrupt or
    SystemExit, which JAX would turn into its runtime error) or else `error` itself."""
    with _FAILED_LOCK:
        same = _FAILED.setdefault(str(error), [])
        same.append(error if original is None else original)
        del same[:-_KEEP]
        while len(_FAILED) > _KEEP:
            _FAILED.popitem(last=False)
    raise error


def host_error(e: Exception) -> BaseException:
    """The exception a callback raised, for the JAX runtime error that carried it (else `e`)."""
    text = str(e)
    with _FAILED_LOCK:
        hits = [msg for msg in _FAILED if msg in text]
        if not hits:
            return e
        msg = max(hits, key=len)  # another error's text may be a prefix of this one's
        errors = _FAILED[msg]
        got = errors.pop(0)
        if not errors:
            del _FAILED[msg]
        return got


def _run_user(who, what, fn, **kwargs):
    try:
        fn(**kwargs)
    except Exception as e:
        _fail(MXNetError(f"{who}: {what} raised {type(e).__name__}: {e}"))
    except BaseException as e:  # KeyboardInterrupt, SystemExit: the caller gets them as they are
        _fail(MXNetError(f"{who}: {what} interrupted by {type(e).__name__} "
                         f"(#{next(_TOKENS)} {threading.get_ident()})"), e)


def _result(who, what, name, h, spec):
    a = getattr(h, "_data", h)
    if tuple(np.shape(a)) != tuple(spec.shape):
        _fail(MXNetError(f"{who}: after {what}, {name} has shape {tuple(np.shape(a))}; it must keep "
                         f"{tuple(spec.shape)} (write into it with assign or [:])"))
    return np.asarray(a, dtype=spec.dtype)
