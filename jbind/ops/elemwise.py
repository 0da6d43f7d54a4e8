"""Elementwise math ops (broadcasting: broadcast.py; reductions, dot and creation: reduce.py).

Each family is one base class (shape rule, dtype rule, lowering) and one table of
`(MXNet name, function, aliases)` rows; the classes registered from the tables carry
MXNet's names, parameters and defaults. Gradients are JAX's, except where MXNet's
differ at ties: `max`/`min`/`_maximum`/`_minimum` send the whole gradient to every
tied element (MXNet's mask), and `clip` passes it on the closed interval. Logical ops
return 1 or 0 in the input dtype and have no gradient.
"""
from __future__ import annotations

from typing import Callable, ClassVar, Literal, Optional

import jax
import jax.numpy as jnp
import jax.scipy.special as jsp
import numpy as np

from ..base import MXNetError, ShapeError, fmt_shape, np_dtype
from ._base import Op, frozen, register
from .nn import relu

_DTYPES = ("bfloat16", "bool", "float16", "float32", "float64", "int32", "int64", "int8", "uint8")


class DType(str):
    """Annotation for dtype parameters: a name, a numpy type or a dtype, stored as its name."""


def _dtype_name(v, allowed=_DTYPES) -> str:
    try:
        name = np_dtype(v.strip().strip("'\"") if isinstance(v, str) else v).name
    except (MXNetError, TypeError, ValueError):
        name = str(v)
    if name not in allowed:
        raise ValueError(f"dtype must be one of {', '.join(allowed)}, got {v!r}")
    return name


def _merge(names, shapes):
    """Unify partial shapes (0 = unknown dim); raise naming both sides if they contradict."""
    known, src = None, None
    for n, s in zip(names, shapes):
        if s is None:
            continue
        s = tuple(s)
        if known is None:
            known, src = s, n
            continue
        if len(s) != len(known) or any(a and b and a != b for a, b in zip(known, s)):
            raise ShapeError(f"{src} {fmt_shape(known)} and {n} {fmt_shape(s)} must have the same shape")
        known = tuple(a or b for a, b in zip(known, s))
    return known


def _axes(axis, ndim: int, what: str = "axis") -> tuple:
    out = []
    for a in axis:
        if not -ndim <= a < ndim:
            raise ShapeError(f"{what} {a} is out of range for an input of {ndim} dimensions")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ShapeError(f"{what} {tuple(axis)} has duplicates")
    return tuple(sorted(out))


class _SameShape(Op):
    """Every input and output has one shape, unified from whichever side knows it."""

    def infer_shape(self, ins, outs):
        s = _merge(list(self.arguments()) + list(self.outputs()), list(ins) + list(outs))
        return [s] * len(ins), [s] * len(outs), []


# --- elementwise functions shared by the same-shape, broadcast and scalar families ------
def _div(a, b):
    if jnp.issubdtype(jnp.result_type(a), jnp.integer):
        return jax.lax.div(a, b)  # C's truncating division, as MXNet on integers
    return a / b


def _mod(a, b):
    """numpy's mod (sign of the divisor); x mod 0 is 0, as in MXNet."""
    zero = b == 0
    safe = jnp.where(zero, jnp.ones_like(b), b)
    return jnp.where(zero, jnp.zeros_like(a * b), jnp.mod(a, safe))


def _maximum(a, b):
    return jnp.where((a >= b) | jnp.isnan(a), a, b)  # ties -> lhs; NaN propagates


def _minimum(a, b):
    return jnp.where((a <= b) | jnp.isnan(a), a, b)


def _cmp(f):
    return lambda a, b: f(a, b).astype(jnp.result_type(a))


_BINARY: dict[str, Callable] = {
    "add": jnp.add, "sub": jnp.subtract, "mul": jnp.multiply, "div": _div,
    "power": jnp.power, "maximum": _maximum, "minimum": _minimum, "mod": _mod, "hypot": jnp.hypot,
    "equal": _cmp(jnp.equal), "not_equal": _cmp(jnp.not_equal), "greater": _cmp(jnp.greater),
    "greater_equal": _cmp(jnp.greater_equal), "lesser": _cmp(jnp.less),
    "lesser_equal": _cmp(jnp.less_equal),
}


def _make(base, name, fn, aliases=(), doc=None):
    cls = type(name, (base,), {"fn": staticmethod(fn), "__module__": __name__, "__qualname__": name,
                               "__doc__": doc or f"{name}: see MXNet 1.x."})
    return register(cls, aliases=aliases)


# --- binary, same shape ---------------------------------------------------------------
@frozen
class _Binary(_SameShape):
    pointwise = True
    fn: ClassVar[Callable]

    def arguments(self):
        return ("lhs", "rhs")

    def lower(self, ins, aux, is_train, key):
        return [self.fn(ins[0], ins[1])], aux


for _n, _name, _al in [
        ("add", "elemwise_add", ("_plus", "_Plus", "_add")),
        ("sub", "elemwise_sub", ("_minus", "_Minus", "_sub")),
        ("mul", "elemwise_mul", ("_mul", "_Mul")),
        ("div", "elemwise_div", ("_div", "_Div")),
        ("power", "_power", ("_Power",)), ("maximum", "_maximum", ("_Maximum",)),
        ("minimum", "_minimum", ("_Minimum",)), ("mod", "_mod", ("_Mod",)), ("hypot", "_hypot", ("_Hypot",)),
        ("equal", "_equal", ("_Equal",)), ("not_equal", "_not_equal", ("_Not_Equal",)),
        ("greater", "_greater", ("_Greater",)), ("greater_equal", "_greater_equal", ("_Greater_Equal",)),
        ("lesser", "_lesser", ("_Lesser",)), ("lesser_equal", "_lesser_equal", ("_Lesser_Equal",))]:
    _make(_Binary, _name, _BINARY[_n], _al, f"Elementwise {_n} of two arrays of one shape.")


@register(aliases=("ElementWiseSum",))
class add_n(_SameShape):
    """Sum of `num_args` arrays of one shape (inputs arg0, arg1, ...)."""
    pointwise = True
    mxnet_order = ()
    num_args: int
    variadic = "num_args"

    def __post_init__(self):
        if self.num_args < 1:
            raise ValueError(f"num_args must be positive, got {self.num_args}")

    def arguments(self):
        return tuple(f"arg{i}" for i in range(self.num_args))

    def lower(self, ins, aux, is_train, key):
        out = ins[0]
        for x in ins[1:]:
            out = out + x
        return [out], aux


# --- with a scalar --------------------------------------------------------------------
@frozen
class _Scalar(_SameShape):
    """The scalar is cast to the array's dtype, except that with `is_int=False` (a float
    scalar, as MXNet 1.9's numpy front end marks it) an integer array is promoted to float64
    first, as MXNet 1.9.1 does (float32 without JAX's x64 mode)."""
    pointwise = True
    scalar: float = 1.0
    is_int: bool = True
    fn: ClassVar[Callable]

    def _promotes(self, dtype) -> bool:
        return not self.is_int and dtype is not None and not jnp.issubdtype(dtype, jnp.floating)

    def infer_type(self, ins, outs):
        if self._promotes(ins[0]):
            return [ins[0]], [np.dtype(np.float64)], []
        return super().infer_type(ins, outs)

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        if self._promotes(x.dtype):
            x = x.astype(jax.dtypes.canonicalize_dtype(np.float64))
        return [self.fn(x, jnp.asarray(self.scalar).astype(x.dtype))], aux


def _swap(f):
    return lambda x, s: f(s, x)


for _n, _al in [("plus", ("_PlusScalar",)), ("minus", ("_MinusScalar",)), ("rminus", ("_RMinusScalar",)),
                ("mul", ("_MulScalar",)), ("div", ("_DivScalar",)), ("rdiv", ("_RDivScalar",)),
                ("power", ("_PowerScalar",)), ("rpower", ("_RPowerScalar",)),
                ("maximum", ("_MaximumScalar",)), ("minimum", ("_MinimumScalar",)),
                ("mod", ("_ModScalar",)), ("rmod", ("_RModScalar",)), ("hypot", ("_HypotScalar",)),
                ("equal", ("_EqualScalar",)), ("not_equal", ("_NotEqualScalar",)),
                ("greater", ("_GreaterScalar",)), ("greater_equal", ("_GreaterEqualScalar",)),
                ("lesser", ("_LesserScalar",)), ("lesser_equal", ("_LesserEqualScalar",))]:
    _base_n = {"plus": "add", "minus": "sub", "rminus": "sub", "rdiv": "div", "rpower": "power",
               "rmod": "mod"}.get(_n, _n)
    _f = _BINARY[_base_n]
    _make(_Scalar, f"_{_n}_scalar", _swap(_f) if _n.startswith("r") else _f, _al,
          f"Elementwise {_n} of an array and `scalar` (cast to the array's dtype).")


def _logical(f):
    return lambda a, b: f(a != 0, b != 0).astype(jnp.result_type(a))


for _n, _f in [("and", jnp.logical_and), ("or", jnp.logical_or), ("xor", jnp.logical_xor)]:
    _cap = _n.capitalize()
    _make(_Binary, f"_logical_{_n}", _logical(_f), (f"_Logical_{_cap}",),
          f"Elementwise logical {_n} of two arrays of one shape: 1 or 0 in the input dtype.")
    _make(_Scalar, f"_logical_{_n}_scalar", _logical(_f), (f"_Logical{_cap}Scalar",),
          f"Elementwise logical {_n} of an array and `scalar`: 1 or 0 in the array's dtype.")


# --- unary -------------------------------------------------------------------------------
def _round(x):
    """Half away from zero (C's round), exact: jnp.round rounds half to even."""
    t = jnp.trunc(x)
    return jnp.where(jnp.abs(x - t) >= 0.5, t + jnp.sign(x), t)


def _rint(x):
    """MXNet's rint: the nearer of floor and ceil, floor on ties."""
    f, c = jnp.floor(x), jnp.ceil(x)
    return jnp.where(x - f <= c - x, f, c)


_UNARY: dict[str, Callable] = {
    "exp": jnp.exp, "log": jnp.log, "log2": jnp.log2, "log10": jnp.log10, "log1p": jnp.log1p,
    "expm1": jnp.expm1, "sqrt": jnp.sqrt, "rsqrt": jax.lax.rsqrt, "cbrt": jnp.cbrt, "square": jnp.square,
    "abs": jnp.abs, "sign": jnp.sign, "negative": jnp.negative, "reciprocal": lambda x: 1 / x,
    "sigmoid": jax.nn.sigmoid, "tanh": jnp.tanh, "relu": relu,
    "sin": jnp.sin, "cos": jnp.cos, "tan": jnp.tan, "arcsin": jnp.arcsin, "arccos": jnp.arccos,
    "arctan": jnp.arctan, "sinh": jnp.sinh, "cosh": jnp.cosh, "arcsinh": jnp.arcsinh,
    "arccosh": jnp.arccosh, "arctanh": jnp.arctanh,
    "floor": jnp.floor, "ceil": jnp.ceil, "round": _round, "rint": _rint, "fix": jnp.trunc,
    "trunc": jnp.trunc, "degrees": jnp.degrees, "radians": jnp.radians,
    "erf": jsp.erf, "gamma": jsp.gamma, "gammaln": jsp.gammaln, "softsign": jax.nn.soft_sign,
    "_copy": lambda x: x, "zeros_like": jnp.zeros_like, "ones_like": jnp.ones_like,
    # integer inputs keep their dtype (the result truncated), as in MXNet
    "rcbrt": lambda x: (1 / jnp.cbrt(x)).astype(x.dtype), "erfinv": lambda x: jsp.erfinv(x).astype(x.dtype),
    "logical_not": lambda x: (x == 0).astype(x.dtype),
}
_UNARY_ALIASES = {"_copy": ("identity",), "erfinv": ("_npx_erfinv",)}


@frozen
class _Unary(_SameShape):
    pointwise = True
    fn: ClassVar[Callable]

    def lower(self, ins, aux, is_train, key):
        return [self.fn(ins[0])], aux


for _n, _f in _UNARY.items():
    _make(_Unary, _n, _f, _UNARY_ALIASES.get(_n, ()), f"Elementwise {_n.strip('_')}.")


def _float_only(dtype) -> None:
    """Refuse integer data, as MXNet's float-only kernels do."""
    if dtype is not None and not jnp.issubdtype(dtype, jnp.floating):
        raise ValueError(f"data must be floating-point, got {np.dtype(dtype).name}")


@register
class hard_sigmoid(_SameShape):
    """max(0, min(1, alpha * data + beta)); the gradient is alpha strictly inside (0, 1), else 0."""
    pointwise = True
    alpha: float = 0.2
    beta: float = 0.5

    def infer_type(self, ins, outs):
        _float_only(ins[0])
        return super().infer_type(ins, outs)

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        # alpha and beta are float32 parameters in MXNet, also for float64 data
        z = x * jnp.asarray(np.float32(self.alpha), x.dtype) + jnp.asarray(np.float32(self.beta), x.dtype)
        return [jnp.where(z <= 0, jnp.zeros_like(z), jnp.where(z >= 1, jnp.ones_like(z), z))], aux


@register
class cast_storage(_SameShape):
    """The data in storage type `stype`. In a graph every array is dense, so this is the
    identity (and its gradient passes through); on NDArrays, `mx.nd.cast_storage` makes
    a csr or row_sparse array (jbind/ndarray/sparse.py)."""
    stype: Literal["default", "row_sparse", "csr"]

    def lower(self, ins, aux, is_train, key):
        return [ins[0]], aux


@register
class softmin(_SameShape):
    """softmax(-data / temperature) along `axis`; `dtype` (if given) is the output dtype.

    MXNet 1.9.1's softmin takes one input, so `use_length=True` cannot run there (it fails
    at bind); here it is refused when the op is built.
    """
    axis: int = -1
    temperature: Optional[float] = None
    dtype: Optional[Literal["float16", "float32", "float64"]] = None
    use_length: Optional[bool] = False

    def __post_init__(self):
        if self.use_length:
            raise ValueError("use_length=True is not supported: MXNet 1.9.1's softmin takes no length input")

    def infer_shape(self, ins, outs):
        arg, out, aux = super().infer_shape(ins, outs)
        if out[0] is not None:
            _axes((self.axis,), len(out[0]))
        return arg, out, aux

    def infer_type(self, ins, outs):
        _float_only(ins[0])
        if self.dtype is None:
            return super().infer_type(ins, outs)
        t = np_dtype(self.dtype)
        return [ins[0] if ins[0] is not None else t], [t], []

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        out = jax.dtypes.canonicalize_dtype(np_dtype(self.dtype)) if self.dtype else x.dtype  # f64: f32 without x64
        # float16 is computed in float32, as softmax (MXNET_SAFE_ACCUMULATION)
        z = -x.astype(jnp.promote_types(jnp.promote_types(x.dtype, out), jnp.float32))
        if self.temperature is not None and self.temperature != 1.0:
            z = z / self.temperature
        return [jax.nn.softmax(z, axis=self.axis).astype(out)], aux


@register
class clip(_SameShape):
    """Clip to [a_min, a_max]; the gradient passes inside the closed interval, as in MXNet."""
    pointwise = True
    a_min: float
    a_max: float

    def lower(self, ins, aux, is_train, key):
        x = ins[0]
        lo, hi = jnp.asarray(self.a_min, x.dtype), jnp.asarray(self.a_max, x.dtype)
        return [jnp.where(x > hi, hi, jnp.where(x < lo, lo, x))], aux


@register
class smooth_l1(_SameShape):
    """0.5 (scalar x)^2 where |x| < 1/scalar^2, else |x| - 0.5/scalar^2."""
    pointwise = True
    scalar: float = 1.0

    def lower(self, ins, aux, is_train, key):
        x, s2 = ins[0], self.scalar * self.scalar
        return [jnp.where(jnp.abs(x) < 1.0 / s2, 0.5 * s2 * x * x, jnp.abs(x) - 0.5 / s2)], aux


@register(aliases=("cast",))
class Cast(_SameShape):
    """Convert to `dtype`; the gradient is cast back to the input's dtype."""
    pointwise = True
    dtype: DType

    def __post_init__(self):
        object.__setattr__(self, "dtype", _dtype_name(self.dtype))

    def infer_type(self, ins, outs):
        return [ins[0]], [np_dtype(self.dtype)], []

    def lower(self, ins, aux, is_train, key):
        return [ins[0].astype(np_dtype(self.dtype))], aux


@register
class where(Op):
    """x where condition is nonzero, else y; condition has x's shape or is 1-D over x's first axis."""

    def arguments(self):
        return ("condition", "x", "y")

    def infer_shape(self, ins, outs):
        c = ins[0]
        if c is None or not all(c):  # as MXNet: nothing is inferred before the condition's whole shape
            return list(ins), list(outs), []
        s = _merge(["x", "y", "output"], [ins[1], ins[2], outs[0]])
        if c is not None and s is not None and len(c) == 1 and len(s) > 1:
            if c[0] and s[0] and c[0] != s[0]:
                raise ShapeError(f"a 1-D condition {fmt_shape(c)} must have the length of x's first axis "
                                 f"{s[0]}")
        elif c is not None and s is not None:
            c = s = _merge(["condition", "x"], [c, s])
        return [c, s, s], [s], []

    def infer_type(self, ins, outs):
        t = next((t for t in (ins[1], ins[2], outs[0]) if t is not None), None)
        return [ins[0], t, t], [t], []

    def lower(self, ins, aux, is_train, key):
        c, x, y = ins
        if c.ndim == 1 and x.ndim > 1:
            c = c.reshape((-1,) + (1,) * (x.ndim - 1))
        return [jnp.where(c != 0, x, y)], aux


for _c in (_Scalar, _Unary, clip, Cast):  # MXNet's monitors call their input NAME_input0
    _c.lists_input_names = False
