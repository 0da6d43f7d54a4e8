"""The operator protocol and registry.

An operator is a frozen dataclass whose fields are its MXNet parameters (same names,
same defaults). It states its inputs, its shape and dtype rules and its lowering in one
place. Parameters arrive as Python values or as MXNet's JSON strings and are parsed by
`Op.from_attrs` from the field annotations.
"""
from __future__ import annotations

import ast
import dataclasses
import threading
import typing
from typing import Any, ClassVar, Literal, Optional, Sequence

import numpy as np

from .. import _limits
from .._memo import stable_hash
from ..base import MXNetError, ParamError

Shape = tuple  # a tuple of ints; None means unknown
REGISTRY: dict[str, type["Op"]] = {}
ALIASES: dict[str, str] = {}
# jbind's own ops, not MXNet's: callable on NDArrays by name (`imperative.invoke`), never in
# `mx.nd` / `mx.sym` namespaces or a Symbol (so no graph or JSON of jbind names an op MXNet lacks)
PRIVATE: dict[str, type["Op"]] = {}


class Op:
    """Base class of operators. Subclasses are frozen dataclasses registered with `@register`."""

    def __new__(cls, *args, **kwargs):
        if cls not in _MADE:
            made(cls)
        return object.__new__(cls)

    name: ClassVar[str]
    # Names of the op's extra outputs hidden from list_outputs, if any.
    aux_names: ClassVar[tuple[str, ...]] = ()
    # Name of the parameter that counts variadic positional inputs (Concat's num_args).
    variadic: ClassVar[Optional[str]] = None
    # Loss heads ignore the head gradient; backward() needs no out_grads for them.
    is_loss: ClassVar[bool] = False
    # Ops that draw random numbers get a PRNG key in lower().
    random: ClassVar[bool] = False
    # Attributes MXNet sets on the variables it creates for some inputs (BatchNorm's __init__).
    input_var_attrs: ClassVar[dict] = {}
    # MXNet's order of the parameters where it differs from the fields' (a required
    # parameter after optional ones): positional parameters follow it.
    mxnet_order: ClassVar[Optional[tuple]] = None
    # Takes any keyword of `mx.sym` / `mx.nd` as a parameter, as `str(value)` (Custom hands
    # them to its Prop, as MXNet's Python does).
    open_params: ClassVar[bool] = False
    # `mx.nd` runs each call as one compiled program; False where the lowering reads its
    # inputs' values on the host or keeps Python state per call: those run op by op.
    imperative_jit: ClassVar[bool] = True
    # No gradient flows through the op (BlockGrad): arguments whose every path to the
    # outputs passes through one get no backward at all (MXNet's zero-gradient propagation).
    blocks_gradient: ClassVar[bool] = False
    # Its lowering calls Python code (Custom): running its backward has visible effects, so
    # executors run the backward only when asked.
    host_code: ClassVar[bool] = False
    # MXNet registers the op's input names (FListInputNames): its monitors and op hooks
    # call an input NAME_<argument>; where it does not, NAME_input0, NAME_input1, ...
    lists_input_names: ClassVar[bool] = True
    # Each output element is a function of the inputs' elements at the same index alone
    # (every input and output of one shape): executors may run such graphs on flattened,
    # padded arguments (executor/_flat.py).
    pointwise: ClassVar[bool] = False

    # --- structure -------------------------------------------------------------
    def arguments(self) -> tuple[str, ...]:
        return ("data",)

    def monitor_input_names(self) -> tuple[str, ...]:
        """The names MXNet's monitors give the op's inputs (arguments, then aux states)."""
        names = tuple(self.arguments()) + tuple(self.aux_names or ())
        return names if self.lists_input_names else tuple(f"input{i}" for i in range(len(names)))

    def outputs(self) -> tuple[str, ...]:
        return ("output",)

    def total_outputs(self) -> int:
        """Outputs including hidden ones (BatchNorm's mean and var), as MXNet's JSON counts them."""
        return len(self.outputs())

    # --- rules -----------------------------------------------------------------
    def infer_shape(self, ins: list, outs: list):
        """-> (arg shapes, out shapes, aux shapes); None where unknown.

        Default: every input and output has one shape (MXNet's elementwise rule), the
        merge of what every side knows (partial shapes fill each other's unknown dims).
        """
        known = None
        for s in list(ins) + list(outs):
            if s is None:
                continue
            if known is None:
                known = tuple(s)
            elif len(s) != len(known):
                raise ValueError(f"shapes {tuple(known)} and {tuple(s)} differ in rank")
            else:
                for a, b in zip(known, s):
                    if a and b and a != b:
                        raise ValueError(f"shapes {tuple(known)} and {tuple(s)} differ")
                known = tuple(a or b for a, b in zip(known, s))
        return [known] * len(ins), [known] * len(outs), [known] * len(self.aux_names)

    def infer_type(self, ins: list, outs: list):
        """-> (arg dtypes, out dtypes, aux dtypes). Default: one dtype for all."""
        known = next((t for t in list(ins) + list(outs) if t is not None), None)
        return [known] * len(ins), [known] * len(outs), [known] * len(self.aux_names)

    def draws(self, is_train: bool) -> bool:
        """Whether a forward in this mode draws random numbers (then every such forward
        draws anew, as MXNet's global generator: Dropout draws only in training)."""
        return self.random

    def specialize(self, out_shapes: list) -> "Op":
        """The op to lower once inference knows its output shapes (creation ops with
        unknown dims, `zeros(shape=(0, 200))`, take them from here)."""
        return self

    def lower(self, ins: list, aux: list, is_train: bool, key):
        """-> (outputs, new aux). Pure JAX."""
        raise NotImplementedError(type(self).__name__)

    def check_eager(self, outs: list) -> None:
        """Called on an eagerly run op's outputs (`mx.nd.*`): raise ValueError where MXNet's
        kernel fails at run time (a factorization of a matrix it cannot factor). Inside a
        compiled graph nothing is checked: by default, nothing here either."""

    # --- parameters ------------------------------------------------------------
    @classmethod
    def param_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    @classmethod
    def params_in(cls, attrs: dict) -> dict:
        """The parameters among a JSON node's attributes (the rest stay plain attributes)."""
        names = set(cls.param_names())
        return {k: v for k, v in attrs.items() if k in names}

    @classmethod
    def declared_params(cls) -> tuple[str, ...]:
        """The parameters in MXNet's declared order (what positional parameters fill)."""
        return cls.mxnet_order if cls.mxnet_order is not None else cls.param_names()

    @classmethod
    def from_attrs(cls, attrs: dict[str, Any]) -> "Op":
        hints = _hints(cls)
        known = {f.name: f for f in fields(cls)}
        unknown = [k for k in attrs if k not in known]
        if unknown:
            raise ParamError(
                f"{cls.name}: unknown parameter(s) {', '.join(map(repr, unknown))}; "
                f"known parameters are {', '.join(known) or '(none)'}")
        values = {}
        for k, v in attrs.items():
            try:
                values[k] = parse_value(hints[k], v)
            except (ValueError, SyntaxError, TypeError) as e:
                raise ParamError(f"{cls.name}: cannot parse parameter {k}={v!r} as "
                                 f"{_type_name(hints[k])}: {e}") from None
        for k in _limits.COUNT_PARAMS:  # checked before an op builds a tuple of that many names
            if k in values:
                _limits.check_count(cls.name, k, values[k])
        missing = [n for n, f in known.items() if n not in values
                   and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        if missing:
            raise ParamError(f"{cls.name}: required parameter(s) {', '.join(missing)} not given")
        try:
            op = cls(**values)
        except ValueError as e:
            raise ParamError(f"{cls.name}: {e}") from None
        return op

    # Equality, hash and repr over the parameter values, written once here rather than
    # generated for every op class (dataclass code generation was a fifth of `import jbind`).
    def _values(self) -> tuple:
        return tuple(getattr(self, f.name) for f in fields(self))

    def __eq__(self, other):
        return type(other) is type(self) and self._values() == other._values()

    def __hash__(self):
        return hash((type(self), self._values()))

    def __repr__(self):
        args = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self))
        return f"{type(self).__qualname__}({args})"

    def hash_key(self) -> int:
        """Hash of the op's class and parameter values, computed once.

        Hashed through repr: Python's hash(-1) == hash(-2) (and hash(0.0) == hash(-0.0)),
        so hashing the values would give softmax(axis=-1) and softmax(axis=-2) one key."""
        k = self.__dict__.get("_jbind_key")
        if k is None:
            k = stable_hash(repr((self.name, tuple(getattr(self, f.name) for f in fields(self)))))
            object.__setattr__(self, "_jbind_key", k)
        return k



_HINTS: dict[type, dict] = {}


def _hints(cls) -> dict:
    h = _HINTS.get(cls)
    if h is None:
        h = _HINTS[cls] = typing.get_type_hints(cls)
    return h


def _type_name(t) -> str:
    return getattr(t, "__name__", None) or str(t).replace("typing.", "")


def literal(s: str):
    """A Python literal from a parameter string: `ast.literal_eval`, which never runs code;
    its parser's own limits (a 100,000-deep `----1` exhausts its stack) become ValueError."""
    try:
        return ast.literal_eval(s)
    except (MemoryError, RecursionError):
        raise ValueError("too deeply nested") from None


def parse_value(t, v):
    """Parse `v` (a Python value or MXNet's string form) as annotation `t`."""
    origin = typing.get_origin(t)
    if origin is typing.Union:  # Optional[X]
        if v is None or (isinstance(v, str) and v.strip() in ("None", "")):
            return None
        (inner,) = [a for a in typing.get_args(t) if a is not type(None)]
        return parse_value(inner, v)
    if origin is Literal:
        choices = typing.get_args(t)
        s = v if not isinstance(v, str) else v.strip().strip("'\"")
        if isinstance(v, np.dtype) or (isinstance(v, type) and issubclass(v, np.generic)):
            s = np.dtype(v).name  # a dtype choice given as numpy's type (`dtype=np.float64`), as MXNet takes it
        if s not in choices:
            raise ValueError(f"must be one of {', '.join(map(repr, choices))}")
        return s
    if t is bool:
        if isinstance(v, str):
            s = v.strip().lower()
            if s in ("true", "1"):
                return True
            if s in ("false", "0"):
                return False
            raise ValueError("not a boolean")
        return bool(v)
    if t is int:
        if isinstance(v, str):
            v = literal(v.strip())
        if isinstance(v, float) and not v.is_integer():
            raise ValueError("not an integer")
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise ValueError("not an integer")
        return int(v)
    if t is float:
        if isinstance(v, str):
            s = v.strip()
            return float(s) if s.lower() not in ("inf", "-inf", "nan") else float(s)
        return float(v)
    if t is str:
        if isinstance(v, np.dtype) or (isinstance(v, type) and issubclass(v, np.generic)):
            return np.dtype(v).name
        return str(v)
    if origin is tuple or t is tuple:  # shapes and axis lists: "(2, 3)", "[2,3]", "2", 2
        if isinstance(v, str):
            s = v.strip()
            v = literal(s) if s else ()
        if v is None:
            return ()
        if isinstance(v, (int, float, np.integer, np.floating)):  # one number is a 1-tuple, as MXNet's
            v = (v,)
        (elt, *_) = typing.get_args(t) or (int,)
        return tuple(parse_value(elt, x) for x in v)
    return v


def to_attr_string(v) -> str:
    """MXNet's JSON form of a parameter value: str() of the Python value."""
    if isinstance(v, str):
        return v
    if isinstance(v, (list, tuple)):
        return "(" + ", ".join(str(int(x)) if isinstance(x, (int, np.integer)) else str(x) for x in v) + \
            ("," if len(v) == 1 else "") + ")"
    if isinstance(v, np.dtype):
        return v.name
    if isinstance(v, type) and issubclass(v, np.generic):
        return np.dtype(v).name
    return str(v)


# Op classes are made dataclasses on first use (an instance, or a look at their fields),
# not when their module is imported: generating a dataclass's methods costs about 0.3 ms
# a class, two thirds of `import jbind` for the 260 ops, of which a script uses a few.
_PENDING: set = set()   # marked by `frozen`, not made yet
_MADE: set = set()      # classes whose every base is made (Op.__new__'s quick test)
_LOCK = threading.RLock()


def frozen(cls):
    """Mark an op class as a frozen dataclass of its parameters (equality, hash, repr: Op's);
    `made` makes it one when it is first used."""
    _PENDING.add(cls)
    return cls


def made(cls):
    """`cls` with itself and its bases made dataclasses (bases first, as at definition)."""
    if cls not in _MADE:
        with _LOCK:
            for c in reversed(cls.__mro__):
                if c in _PENDING:
                    dataclasses.dataclass(frozen=True, eq=False, repr=False)(c)
                    _PENDING.discard(c)
            _MADE.add(cls)
    return cls


_FIELDS: dict = {}


def fields(cls) -> tuple:
    """`dataclasses.fields` of an op class or instance (memoized per class: loading a
    100,000-node graph asks 300,000 times)."""
    c = cls if isinstance(cls, type) else type(cls)
    f = _FIELDS.get(c)
    if f is None:
        f = _FIELDS[c] = dataclasses.fields(made(c))
    return f


FLOATS = ("float16", "float32", "float64")


def float_types(op, ins, outs, floats=FLOATS):
    """The dtype rule of ops whose MXNet kernels take floats only: one dtype for every input
    and output, one of `floats` (MXNet infers an integer dtype, then fails at bind)."""
    t = next((t for t in list(ins) + list(outs) if t is not None), None)
    names = list(op.arguments()) + [f"output {o!r}" for o in op.outputs()]
    for name, u in zip(names, list(ins) + list(outs)):
        if u is not None and np.dtype(u) != np.dtype(t):
            raise ValueError(f"{name} is {np.dtype(u).name}, {names[0]} {np.dtype(t).name}: all must have one dtype")
    if t is not None and np.dtype(t).name not in floats:
        allowed = " or ".join(floats) if len(floats) < 3 else f"{', '.join(floats[:-1])} or {floats[-1]}"
        raise ValueError(f"the inputs must be {allowed}, got {np.dtype(t).name}")
    return [t] * len(ins), [t] * len(outs), []


def _is_op_dataclass(cls) -> bool:
    return any(c in _PENDING or "__dataclass_fields__" in c.__dict__ for c in cls.__mro__)


def register(cls=None, *, aliases: Sequence[str] = (), private: bool = False):
    """Register an op class under its class name (or `name`) and MXNet aliases; `private`:
    one of jbind's own ops (PRIVATE above)."""
    def wrap(c):
        c = c if _is_op_dataclass(c) else frozen(c)
        if "name" not in c.__dict__:
            c.name = c.__name__
        if c.name in REGISTRY or c.name in PRIVATE:
            raise ValueError(f"op {c.name} registered twice")
        (PRIVATE if private else REGISTRY)[c.name] = c
        for a in aliases:
            ALIASES[a] = c.name
        return c
    return wrap(cls) if cls is not None else wrap


def inputs_by_name(op_name: str, names, positional, named: dict) -> dict:
    """An op's inputs as MXNet takes them: positional ones fill `names` in order, keyword
    ones go by name (Symbols when building a graph, arrays in `mx.nd`). A None past the op's
    inputs is an input not given, as in MXNet's generated functions (BilinearResize2D's
    `like` when the mode takes none, a bias None with `no_bias=True`)."""
    positional = list(positional)
    while len(positional) > len(names) and positional[-1] is None:
        positional.pop()
    if len(positional) > len(names):
        raise MXNetError(f"{op_name}: got {len(positional)} positional inputs but the op takes "
                         f"{len(names)} ({', '.join(names)})")
    inputs = dict(zip(names, positional))
    for k, v in named.items():
        if k not in names:
            raise MXNetError(f"{op_name}: unknown input {k!r}; inputs are {', '.join(names)}")
        if k in inputs:
            raise MXNetError(f"{op_name}: input {k!r} given twice")
        inputs[k] = v
    return inputs


def split_positional(cls, args, is_input, params: dict) -> list:
    """MXNet's generated functions take parameters positionally after the inputs, in the
    op's declared order (`mx.nd.clip(x, 0, 1)`, `mx.sym.reshape(s, (2, 3))`): the leading
    positional values for which `is_input` holds are inputs (returned; a None among them,
    in a symbol, an input left to a new variable), the rest go into `params`."""
    n = 0
    while n < len(args) and is_input(args[n]):
        n += 1
    rest = args[n:]
    if cls.variadic or not rest:
        return list(args)
    names = [p for p in cls.declared_params() if p != cls.variadic]
    if len(rest) > len(names):
        raise MXNetError(f"{cls.name}: {len(rest)} positional parameters after the inputs, but the op has "
                         f"{len(names)} ({', '.join(names) or 'none'})")
    if any(is_input(a) for a in rest):
        raise MXNetError(f"{cls.name}: an input after positional parameters; give inputs first")
    for k, v in zip(names, rest):
        if k in params:
            raise MXNetError(f"{cls.name}: parameter {k!r} given twice")
        params[k] = v
    return list(args[:n])


def get_op(name: str, private: bool = False) -> type[Op]:
    """The op class of an MXNet op name or alias (or, with `private`, of one of jbind's own)."""
    cls = REGISTRY.get(name) or REGISTRY.get(ALIASES.get(name, "")) or (PRIVATE.get(name) if private else None)
    if cls is None:
        raise MXNetError(f"unknown operator {name!r}")
    return cls
