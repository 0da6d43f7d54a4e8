"""The Symbol: an immutable handle on a list of graph outputs."""
from __future__ import annotations

from typing import Optional

import numpy as np

from .. import attribute
from .. import _fluent
from ..base import NotImplementedForSymbol
from ..base import DTYPE_NP_TO_MX, STYPE_STR_TO_ID, MXNetError, np_dtype
from ._node import Node, input_versions, topo_order
from .graph import graph_of


class Symbol:
    """A symbolic graph output (or a group of outputs), as MXNet's `mx.sym.Symbol`.

    Symbols are immutable: composition and arithmetic build new nodes. Unlike MXNet,
    `__call__` composition returns a new symbol instead of rewriting this one in place.
    """

    __slots__ = ("_heads", "_fingerprint", "__weakref__")
    __array_priority__ = 1000.0  # `np.float32(2) * s` uses Symbol's operators

    def __init__(self, heads):
        self._heads = tuple(heads)
        self._fingerprint = None

    # --- identity ---------------------------------------------------------------
    @property
    def fingerprint(self) -> str:
        """Structural key: equal for graphs built the same way, whatever their objects."""
        fp = self._fingerprint
        if fp is None:
            h = hash(tuple((node.key, i) for node, i in self._heads)) & 0xFFFFFFFFFFFFFFFF
            fp = self._fingerprint = f"{h:016x}"
        return fp

    @property
    def name(self) -> Optional[str]:
        if len(self._heads) != 1:
            return None
        return self._heads[0][0].name

    def __repr__(self):
        if len(self._heads) == 1:
            return f"<Symbol {self.name}>"
        return f"<Symbol group [{', '.join(self.list_outputs())}]>"

    def __len__(self):
        """The number of outputs."""
        return len(self._heads)

    def __iter__(self):
        return (Symbol([h]) for h in self._heads)

    def __bool__(self):
        raise NotImplementedForSymbol("__bool__", "bool")

    # Unlike MXNet's, Symbols stay hashable (by identity) although `==` builds a symbol.
    __hash__ = object.__hash__

    def __copy__(self):
        return self.__deepcopy__(None)

    def __deepcopy__(self, memo):
        """A copy of the whole graph, as MXNet's: new nodes with the same names, attributes and
        structure (so the same fingerprint); `_set_attr` on one leaves the other as it was."""
        copied: dict[int, Node] = {}
        for n in topo_order(self._heads):
            ins = tuple((copied[id(c)], i) for c, i in n.inputs)
            copied[id(n)] = Node(n.op, n.name, dict(n.attrs), ins)
        return Symbol([(copied[id(n)], i) for n, i in self._heads])

    def __getstate__(self):
        return {"handle": self.tojson() if self._heads else None}  # MXNet's pickled state

    def __setstate__(self, state):
        from .json_io import load_json
        handle = state["handle"]
        self._heads = load_json(handle)._heads if handle is not None else ()
        self._fingerprint = None

    # --- listing ----------------------------------------------------------------
    def list_arguments(self) -> list[str]:
        return list(graph_of(self).arg_names)

    def list_auxiliary_states(self) -> list[str]:
        return list(graph_of(self).aux_names)

    def list_inputs(self) -> list[str]:
        return list(graph_of(self).input_names)

    def list_outputs(self) -> list[str]:
        return [n.output_name(i) for n, i in self._heads]

    def get_internals(self) -> "Symbol":
        heads = [(n, i) for n in topo_order(self._heads) for i in range(n.num_outputs())]
        return Symbol(heads)

    def get_children(self) -> Optional["Symbol"]:
        seen, inputs = set(), []
        for n, _ in self._heads:   # each node's inputs once, though several of its outputs are heads
            if id(n) not in seen:
                seen.add(id(n))
                inputs.extend(n.inputs)
        return Symbol(inputs) if inputs else None

    def __getitem__(self, index) -> "Symbol":
        if isinstance(index, str):
            names = self.list_outputs()
            hits = [i for i, n in enumerate(names) if n == index]
            if not hits:
                raise ValueError(f"There is no output named {index!r}; outputs are {names}")
            if len(hits) > 1:
                raise ValueError(f"There are multiple outputs with name {index!r}")
            index = hits[0]
        if isinstance(index, slice):
            return Symbol(self._heads[index])
        if not isinstance(index, (int, np.integer)):
            raise TypeError(f"Symbol index must be an int, a slice or an output name, not {type(index).__name__}")
        if not -len(self._heads) <= index < len(self._heads):
            raise IndexError(f"Symbol index {index} out of range for {len(self._heads)} outputs")
        return Symbol([self._heads[index]])

    # --- attributes ---------------------------------------------------------------
    def attr(self, key: str) -> Optional[str]:
        if len(self._heads) != 1:
            return None
        attrs = self._heads[0][0].attrs
        if key in attribute.HIDDEN_KEYS and key not in attrs:  # MXNet reads `lr_mult` as `__lr_mult__`
            key = f"__{key}__"
        return attrs.get(key)

    def list_attr(self, recursive: bool = False) -> dict:
        if recursive:
            raise DeprecationWarning("Symbol.list_attr with recursive=True has been deprecated. "
                                     "Please use attr_dict instead.")
        if len(self._heads) != 1:
            return {}
        return _listed(self._heads[0][0].attrs)

    def attr_dict(self) -> dict:
        return {n.name: _listed(n.attrs) for n in topo_order(self._heads) if n.attrs}

    def _set_attr(self, **kwargs):
        # Attributes are not part of the fingerprint (beyond shape/dtype hints, which
        # are rejected here), so setting them in place keeps the graph's key valid.
        for k, v in kwargs.items():
            if not isinstance(v, str):
                raise ValueError("Set Attr only accepts string values")
            if k in ("__shape__", "__dtype__"):
                raise MXNetError(f"attribute {k} cannot be changed on an existing symbol")
        for n, _ in self._heads:
            n.attrs.update(attribute.hide(kwargs))

    # --- composition --------------------------------------------------------------
    def __call__(self, *args, **kwargs) -> "Symbol":
        """Return a copy with free variables replaced by the given symbols (by name or position)."""
        name = kwargs.pop("name", None)
        if args and kwargs:
            raise TypeError("compose only accept input Symbols either as positional or keyword arguments, not both")
        args_names = self.list_arguments()
        repl = dict(zip(args_names, args)) if args else dict(kwargs)
        for k, v in repl.items():
            if not isinstance(v, Symbol) or len(v) != 1:
                raise TypeError(f"compose expects single-output Symbols, got {type(v).__name__} for {k!r}")
            if k not in args_names and k not in self.list_inputs():
                raise MXNetError(f"compose: {k!r} is not an argument; arguments are {args_names}")
        memo: dict[int, tuple] = {}

        def rebuild(node):
            got = memo.get(id(node))
            if got is not None:
                return got
            if node.op is None:
                new = (None, repl[node.name]._heads[0]) if node.name in repl else (node, None)
            else:
                ins = tuple(_entry(rebuild(c), i) for c, i in node.inputs)
                if all(a == b for a, b in zip(ins, node.inputs)):
                    new = (node, None)
                else:
                    new = (Node(node.op, node.name, dict(node.attrs), ins), None)
            memo[id(node)] = new
            return new

        for n in topo_order(self._heads):
            rebuild(n)
        heads = [_entry(memo[id(n)], i) for n, i in self._heads]
        if name and len(heads) == 1:
            n, i = heads[0]
            heads = [(Node(n.op, name, dict(n.attrs), n.inputs), i)]
        return Symbol(heads)

    # --- arithmetic ---------------------------------------------------------------
    def _binary(self, other, op, scalar_op, hint):
        _ops = _ops_module()
        if isinstance(other, Symbol):
            return _ops.make(op, [self, other], {}, hint=hint)
        if isinstance(other, (int, float, np.number, bool)):
            return _ops.make(scalar_op, [self], {"scalar": other}, hint=_scalar_hint(scalar_op))
        return NotImplemented

    def _rscalar(self, other, scalar_op):
        _ops = _ops_module()
        if isinstance(other, (int, float, np.number, bool)):
            return _ops.make(scalar_op, [self], {"scalar": other}, hint=_scalar_hint(scalar_op))
        return NotImplemented

    def __add__(self, o): return self._binary(o, "elemwise_add", "_plus_scalar", "_plus")
    def __radd__(self, o): return self._rscalar(o, "_plus_scalar")
    def __sub__(self, o): return self._binary(o, "elemwise_sub", "_minus_scalar", "_minus")
    def __rsub__(self, o): return self._rscalar(o, "_rminus_scalar")
    def __mul__(self, o): return self._binary(o, "elemwise_mul", "_mul_scalar", "_mul")
    def __rmul__(self, o): return self._rscalar(o, "_mul_scalar")
    def __truediv__(self, o): return self._binary(o, "elemwise_div", "_div_scalar", "_div")
    def __rtruediv__(self, o): return self._rscalar(o, "_rdiv_scalar")
    def __mod__(self, o): return self._binary(o, "_mod", "_mod_scalar", "_mod")
    def __rmod__(self, o): return self._rscalar(o, "_rmod_scalar")
    def __pow__(self, o): return self._binary(o, "_power", "_power_scalar", "_power")
    def __rpow__(self, o): return self._rscalar(o, "_rpower_scalar")
    def __neg__(self): return self.__mul__(-1.0)
    def __abs__(self): return self.abs()

    def _compare(self, other, op, scalar_op):
        _ops = _ops_module()
        if isinstance(other, Symbol):
            return _ops.make(op, [self, other], {}, hint=op)
        if isinstance(other, (int, float, np.number, bool)):
            return _ops.make(scalar_op, [self], {"scalar": other}, hint=scalar_op)
        raise TypeError(f"type {type(other)} not supported")  # as MXNet: even for == and !=

    def __eq__(self, o): return self._compare(o, "_equal", "_equal_scalar")
    def __ne__(self, o): return self._compare(o, "_not_equal", "_not_equal_scalar")
    def __gt__(self, o): return self._compare(o, "_greater", "_greater_scalar")
    def __ge__(self, o): return self._compare(o, "_greater_equal", "_greater_equal_scalar")
    def __lt__(self, o): return self._compare(o, "_lesser", "_lesser_scalar")
    def __le__(self, o): return self._compare(o, "_lesser_equal", "_lesser_equal_scalar")

    # --- serialisation ------------------------------------------------------------
    def tojson(self, remove_amp_cast: bool = True) -> str:
        """MXNet's JSON; by default without the `amp_cast`s that feed other nodes (as MXNet)."""
        from .json_io import to_json
        return to_json(self, remove_amp_cast)

    def save(self, fname: str, remove_amp_cast: bool = True):
        from ..io_util import atomic_write_text
        atomic_write_text(fname, self.tojson(remove_amp_cast))

    def debug_str(self) -> str:
        """MXNet's text dump of the graph: the outputs, then every node in topological
        order, ops with their inputs (a variable's `version` counts the ops that wrote it
        before, as aux states) and their attributes."""
        heads = self._heads
        if len(heads) == 1 and not heads[0][0].inputs:
            n = heads[0][0]
            return f"Variable:{n.name}\n" if n.op is None else f"AtomicFunctor  Op:{n.op.name}\n"
        lines = ["Symbol Outputs:"] + [f"\toutput[{k}]={n.name}({i})" for k, (n, i) in enumerate(heads)]
        nodes = topo_order(heads)
        versions = input_versions(nodes)
        for n in nodes:
            if n.op is None:
                lines.append(f"Variable:{n.name}")
                continue
            lines += ["-" * 20, f"Op:{n.op.name}, Name={n.name}", "Inputs:"]
            for k, ((c, i), v) in enumerate(zip(n.inputs, versions[id(n)])):
                lines.append(f"\targ[{k}]={c.name}({i})" + ("" if c.op is not None else f" version={v}"))
            if n.attrs:
                lines += ["Attrs:"] + [f"\t{k}={v}" for k, v in sorted(n.attrs.items())]
        return "\n".join(lines) + "\n"

    # --- inference and binding ------------------------------------------------------
    def infer_shape(self, *args, **kwargs):
        from .infer import infer_shape
        return infer_shape(self, args, kwargs, partial=False)

    def infer_shape_partial(self, *args, **kwargs):
        from .infer import infer_shape
        return infer_shape(self, args, kwargs, partial=True)

    def infer_type(self, *args, **kwargs):
        from .infer import infer_type
        return infer_type(self, args, kwargs, partial=False)

    def infer_type_partial(self, *args, **kwargs):
        from .infer import infer_type
        return infer_type(self, args, kwargs, partial=True)

    def simple_bind(self, ctx, grad_req="write", type_dict=None, stype_dict=None, group2ctx=None,
                    shared_arg_names=None, shared_exec=None, shared_buffer=None, **kwargs):
        from ..executor import simple_bind
        # As MXNet, only tuple (or list) keywords are shapes; others (`force_rebind=True`) are ignored.
        shapes = {k: v for k, v in kwargs.items() if isinstance(v, (tuple, list))}
        return simple_bind(self, ctx, grad_req=grad_req, type_dict=type_dict, group2ctx=group2ctx,
                           shared_arg_names=shared_arg_names, shared_exec=shared_exec,
                           shared_buffer=shared_buffer, shapes=shapes)

    def bind(self, ctx, args, args_grad=None, grad_req="write", aux_states=None, group2ctx=None,
             shared_exec=None):
        from ..executor import bind
        return bind(self, ctx, args, args_grad=args_grad, grad_req=grad_req, aux_states=aux_states,
                    group2ctx=group2ctx, shared_exec=shared_exec)

    def eval(self, ctx=None, **kwargs) -> list:
        """Bind to the arrays given by name and run forward: the list of output NDArrays."""
        from ..context import current_context
        return self.bind(ctx if ctx is not None else current_context(), kwargs).forward()

    def _gen_atomic_symbol(self) -> "Symbol":
        """The head node's operator alone (MXNet's atomic symbol): the same op and
        attributes over fresh variables named after the op's inputs."""
        node = self._heads[0][0]
        if node.op is None:
            raise MXNetError(f"_gen_atomic_symbol: {node.name!r} is a Variable, not an operator")
        names = list(node.op.arguments()) + list(node.op.aux_names)
        atom = Node(node.op, node.name, dict(node.attrs), tuple((Node(None, n, {}, ()), 0) for n in names))
        return Symbol([(atom, i) for i in range(atom.num_outputs())])

    # --- MXNet features outside jbind -------------------------------------------------
    def as_nd_ndarray(self) -> "Symbol":
        return self

    def as_np_ndarray(self):
        raise MXNetError("as_np_ndarray: jbind has no mx.np (numpy-compatible) symbols")

    def gradient(self, wrt):
        raise MXNetError("Symbol.gradient is not implemented (nor is it in MXNet 1.9.1); "
                         "bind the symbol and call backward")

    def optimize_for(self, backend, *args, **kwargs):
        raise MXNetError(f"optimize_for({backend!r}): jbind has no subgraph backends; XLA compiles "
                         "the whole graph when it is bound")

    def get_backend_symbol(self, backend):
        raise MXNetError(f"get_backend_symbol({backend!r}): jbind has no subgraph backends; XLA "
                         "compiles the whole graph when it is bound")


def _fluent_call(op_name, sym, args, kwargs):
    from . import _functions  # mx.sym's constructor of each op: MXNet's node names (`cast0`, `split0`)
    return _functions[op_name](sym, *args, **kwargs)


_fluent.install(Symbol, _fluent_call, "mx.sym", refuse=_fluent.NDARRAY_ONLY)


def _ops_module():
    from . import ops
    globals()["_ops_module"] = lambda: ops
    return ops


def _listed(attrs: dict) -> dict:
    """Attributes as MXNet lists them: hidden keys (`__lr_mult__`) also without underscores."""
    out = dict(attrs)
    for k in attribute.HIDDEN_KEYS:
        if f"__{k}__" in attrs:
            out[k] = attrs[f"__{k}__"]
    return out


def _scalar_hint(op_name: str) -> str:
    # MXNet's operators call _internal._MulScalar etc.: nodes are named `_mulscalar0`;
    # but 2 ** x calls _internal._rpower_scalar: `_rpower_scalar0`.
    return op_name if op_name == "_rpower_scalar" else op_name.replace("_scalar", "scalar")


def _entry(rebuilt, i):
    node, fixed = rebuilt
    return (node, i) if fixed is None else fixed


def Variable(name, attr=None, shape=None, lr_mult=None, wd_mult=None, dtype=None, init=None,
             stype=None, **kwargs) -> Symbol:
    """Create a symbolic variable (MXNet's `mx.sym.Variable` / `mx.sym.var`)."""
    if not isinstance(name, str):
        raise TypeError("Expect a string for variable `name`")
    attrs = attribute.hide(attribute.current().get(attr))
    if shape is not None:
        if isinstance(shape, (int, np.integer)):  # `shape=(1)` is an int; MXNet takes it as (1,)
            shape = (shape,)
        attrs["__shape__"] = str(tuple(int(d) for d in shape))
    if lr_mult is not None:
        attrs["__lr_mult__"] = str(lr_mult)
    if wd_mult is not None:
        attrs["__wd_mult__"] = str(wd_mult)
    if dtype is not None:
        attrs["__dtype__"] = str(DTYPE_NP_TO_MX[np_dtype(dtype)])
    if init is not None:
        attrs["__init__"] = init if isinstance(init, str) else init.dumps()
    if stype is not None:
        if stype not in STYPE_STR_TO_ID:
            raise MXNetError(f"Variable {name!r}: unknown stype {stype!r}; expected one of {list(STYPE_STR_TO_ID)}")
        attrs["__storage_type__"] = str(STYPE_STR_TO_ID[stype])
    for k, v in kwargs.items():
        if k.startswith("__") and k.endswith("__"):
            attrs[k] = str(v)
        else:
            raise ValueError(f"Attribute name={k} is not supported. Additional attributes must start "
                             "and end with double underscores, e.g, __yourattr__")
    return Symbol([(Node(None, name, attrs, ()), 0)])


var = Variable


def Group(symbols) -> Symbol:
    """Group several symbols into one multi-output symbol."""
    symbols = list(symbols)
    if not symbols or any(not isinstance(s, Symbol) for s in symbols):
        raise TypeError("Expected a list of symbols as input")
    return Symbol([h for s in symbols for h in s._heads])
