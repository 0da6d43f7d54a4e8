"""Gluon's `Block` and `HybridBlock` (and `SymbolBlock`, from `_symbol_block`).

Naming follows MXNet: a top-level block takes `hint + counter + '_'` from the global
name manager ('dense0_'), a child block made inside its parent's `name_scope()` takes
the parent's prefix plus a per-parent counter ('model_dense0_'), and its parameters
are named `prefix + name` ('dense0_weight').
"""
from __future__ import annotations

import re
import warnings
from collections import OrderedDict, defaultdict

from .. import initializer
from .. import ndarray as nd
from .. import symbol as sym_mod
from ..base import MXNetError
from ..ndarray.ndarray import NDArray
from ..symbol.symbol import Symbol
from ._cached_graph import CachedGraph, trace
from ._parameter_dict import ParameterDict
from ._scope import BlockScope
from ._util import (GluonTypeError, GluonValueError, HookHandle, brief_print_list, check, flatten, indent, leaves,
                    strip_none, warn_unregistered_containers)
from .parameter import DeferredInitializationError, Parameter

__all__ = ["Block", "HybridBlock", "SymbolBlock"]

class Block:
    """MXNet's `gluon.Block`: a model piece holding parameters and child blocks.

    Args:
        prefix: prefix of this block's parameter and child names (default from the class name).
        params: a ParameterDict to share parameters from.
    """

    def __init__(self, prefix=None, params=None):
        self._empty_prefix = prefix == ""
        self._prefix, self._params = BlockScope.create(prefix, params, self._alias())
        self._name = self._prefix[:-1] if self._prefix.endswith("_") else self._prefix
        self._scope = BlockScope(self)
        self._children = OrderedDict()
        self._reg_params = {}
        self._forward_hooks = OrderedDict()
        self._forward_pre_hooks = OrderedDict()

    def __repr__(self):
        mods = "\n".join(f"  ({key}): {indent(repr(block), 2)}" for key, block in self.__dict__.items()
                         if isinstance(block, Block))
        return f"{self.__class__.__name__}(\n{mods}\n)"

    def __setattr__(self, name, value):
        """Registers Blocks as children and Parameters as this block's own."""
        if hasattr(self, name):
            existing = getattr(self, name)
            if isinstance(existing, (Parameter, Block)) and not isinstance(value, type(existing)):
                raise GluonTypeError(f"Changing attribute type for {name} from {type(existing)} to {type(value)}"
                                     "is not allowed.")
        if isinstance(value, Block):
            self.register_child(value, name)
        elif isinstance(value, Parameter):
            check(name not in self._reg_params, f"Overriding Parameter attribute {name} is not allowed. If you "
                  "want to share parameters between blocks, please set 'params' at Block construction instead.")
            self._reg_params[name] = value
        super().__setattr__(name, value)

    def _check_container_with_block(self):
        warn_unregistered_containers(self)

    def _alias(self) -> str:
        return self.__class__.__name__.lower()

    @property
    def prefix(self) -> str:
        """The prefix of this block's names, e.g. 'dense0_'."""
        return self._prefix

    @property
    def name(self) -> str:
        """The prefix without its trailing underscore."""
        return self._name

    def name_scope(self):
        """A `with` scope in which new child blocks (and symbols) get this block's prefix."""
        return self._scope

    @property
    def params(self) -> ParameterDict:
        """This block's own parameters (not its children's)."""
        return self._params

    def collect_params(self, select=None) -> ParameterDict:
        """This block's and its descendants' parameters; `select` a regex on their full names."""
        self._check_container_with_block()
        ret = ParameterDict(self._params.prefix)
        if not select:
            ret.update(self.params)
        else:
            pattern = re.compile(select)
            ret.update({k: v for k, v in self.params.items() if pattern.match(k)})
        for child in self._children.values():
            ret.update(child.collect_params(select=select))
        return ret

    def _collect_params_with_prefix(self, prefix=""):
        if prefix:
            prefix += "."
        ret = {prefix + key: val for key, val in self._reg_params.items()}
        for name, child in self._children.items():
            ret.update(child._collect_params_with_prefix(prefix + name))
        return ret

    def save_parameters(self, filename, deduplicate=False) -> None:
        """Save parameters under structural names ('0.weight', 'conv.bias') in MXNet's .params
        format; with `deduplicate`, a shared parameter is saved once."""
        params = self._collect_params_with_prefix()
        if deduplicate:
            first = {}
            for k, v in params.items():
                first.setdefault(id(v), (k, v))
            params = dict(first.values())
        nd.save(filename, {key: val._reduce() for key, val in params.items()})

    def save_params(self, filename) -> None:
        """Deprecated: save under full parameter names without this block's prefix."""
        warnings.warn("save_params is deprecated. Please use save_parameters. Note that if you want load from "
                      "SymbolBlock later, please use export instead.", stacklevel=2)
        try:
            self.collect_params().save(filename, strip_prefix=self.prefix)
        except ValueError as e:
            raise GluonValueError(f"{e}\nsave_params is deprecated. Using save_parameters may resolve this error.")

    def load_parameters(self, filename, ctx=None, allow_missing=False, ignore_extra=False, cast_dtype=False,
                        dtype_source="current") -> None:
        """Load a file from `save_parameters` (or, without '.' in its names, from `save_params`)."""
        loaded = nd.load(filename, any_layout=True)
        params = self._collect_params_with_prefix()
        if not loaded and not params:
            return
        if not any("." in k for k in loaded):  # the older, prefix-based layout
            del loaded
            self.collect_params().load(filename, ctx, allow_missing, ignore_extra, self.prefix,
                                       cast_dtype=cast_dtype, dtype_source=dtype_source)
            return
        if not allow_missing:
            names_of = defaultdict(list)
            for k, v in params.items():
                names_of[id(v)].append(k)
            for name, param in params.items():
                check(any(p in loaded for p in names_of[id(param)]), f"Parameter '{name}' is missing in file "
                      f"'{filename}', which contains parameters: {brief_print_list(loaded.keys())}. Set "
                      "allow_missing=True to ignore missing parameters.")
        for name in loaded:
            if not ignore_extra and name not in params:
                raise GluonValueError(f"Parameter '{name}' loaded from file '{filename}' is not present in "
                                      f"ParameterDict, which contains parameters {brief_print_list(params.keys())}."
                                      " Set ignore_extra=True to ignore. ")
            if name in params:
                params[name]._load_init(loaded[name], ctx, cast_dtype=cast_dtype, dtype_source=dtype_source)

    def save(self, prefix) -> None:
        """Write '<prefix>-model.json' (the block tree, names and traced graphs) and
        '<prefix>-model.params', as MXNet's `Block.save`."""
        from ._block_save import save_model
        save_model(self, prefix)

    def load(self, prefix) -> None:
        """Load a model written by `save` into this block, built the same way as the saved one."""
        from ._block_save import load_model
        load_model(self, prefix)

    def load_params(self, filename, ctx=None, allow_missing=False, ignore_extra=False) -> None:
        """Deprecated name of `load_parameters`."""
        warnings.warn("load_params is deprecated. Please use load_parameters.", stacklevel=2)
        self.load_parameters(filename, ctx, allow_missing, ignore_extra)

    def register_child(self, block, name=None) -> None:
        """Make `block` a child (its parameters are collected with this block's)."""
        if name is None:
            name = str(len(self._children))
        self._children[name] = block

    def register_forward_pre_hook(self, hook) -> HookHandle:
        """Call `hook(block, inputs)` before each forward."""
        handle = HookHandle()
        handle.attach(self._forward_pre_hooks, hook)
        return handle

    def register_forward_hook(self, hook) -> HookHandle:
        """Call `hook(block, inputs, outputs)` after each forward."""
        handle = HookHandle()
        handle.attach(self._forward_hooks, hook)
        return handle

    def register_op_hook(self, callback, monitor_all=False) -> None:
        """`HybridBlock.register_op_hook` on every child."""
        for child in self._children.values():
            child.register_op_hook(callback, monitor_all)

    def apply(self, fn) -> "Block":
        """Call `fn(block)` on every descendant, then on this block."""
        for child in self._children.values():
            child.apply(fn)
        fn(self)
        return self

    def initialize(self, init=None, ctx=None, verbose=False, force_reinit=False) -> None:
        """Initialize every collected parameter (`init` default: Uniform)."""
        self.collect_params().initialize(init if init is not None else initializer.Uniform(), ctx, verbose,
                                         force_reinit)

    def hybridize(self, active=True, **kwargs) -> None:
        """Hybridize every HybridBlock among the descendants (a plain Block itself is not)."""
        for child in self._children.values():
            child.hybridize(active, **kwargs)

    def cast(self, dtype) -> None:
        """Cast every parameter (own and descendants') to `dtype`."""
        for child in self._children.values():
            child.cast(dtype)
        for p in self.params.values():
            p.cast(dtype)

    def zero_grad(self) -> None:
        """Zero every collected parameter's gradient."""
        self.collect_params().zero_grad()

    def reset_ctx(self, ctx) -> None:
        self.collect_params().reset_ctx(ctx)

    def __call__(self, *args):
        for hook in self._forward_pre_hooks.values():
            hook(self, args)
        out = self.forward(*args)
        for hook in self._forward_hooks.values():
            hook(self, args, out)
        return out

    def forward(self, *args):
        """The computation; subclasses override it."""
        raise NotImplementedError

    def summary(self, *inputs) -> None:
        """Print each layer's output shape and parameter counts for one forward of `inputs`."""
        from ._summary import summary
        summary(self, *inputs)


class HybridBlock(Block):
    """A Block whose `hybrid_forward(F, x, *args, **params)` runs on NDArrays (`F = mx.nd`)
    or, after `hybridize()`, is traced once with `F = mx.sym` into a Symbol that runs
    compiled through jbind's executors and compile cache."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._cached_graph = ()
        self._cached_op = None
        self._out_format = None
        self._in_format = None
        self._active = False
        self._flags = []
        self._op_hook = None

    def __setattr__(self, name, value):
        super().__setattr__(name, value)
        if isinstance(value, HybridBlock):
            self._clear_cached_op()

    def register_op_hook(self, callback, monitor_all=False) -> None:
        """Call `callback(node_name, op_name, NDArray)` for each op's outputs (and inputs, with
        `monitor_all`) on inference calls once the graph is next built; on this block and its
        direct children, as in MXNet (see `gluon._op_hook` for names and differences)."""
        self._op_hook = (callback, bool(monitor_all))
        for child in self._children.values():
            child._op_hook = self._op_hook

    def register_child(self, block, name=None) -> None:
        if not isinstance(block, HybridBlock):
            raise GluonValueError(f"Children of HybridBlock must also be HybridBlock, but {block!s} has type "
                                  f"{type(block)!s}. If you are using Sequential, please try HybridSequential "
                                  "instead.")
        super().register_child(block, name)
        self._clear_cached_op()

    def hybridize(self, active=True, static_alloc=False, static_shape=False, **kwargs) -> None:
        """Turn tracing on (or off). `static_alloc` / `static_shape` are accepted: jbind's
        compiled calls always keep their buffers and compile once per input shape."""
        self._active = active
        self._flags = [("static_alloc", static_alloc), ("static_shape", static_shape)] + list(kwargs.items())
        self._clear_cached_op()
        if active and (self._forward_hooks or self._forward_pre_hooks):
            warnings.warn(f'"{self}" is being hybridized while still having forward hook/pre-hook. If "{self}" is '
                          "a child of HybridBlock, the hooks will not take effect.", stacklevel=2)
        super().hybridize(active, static_alloc=static_alloc, static_shape=static_shape, **kwargs)

    def cast(self, dtype) -> None:
        self._clear_cached_op()
        super().cast(dtype)

    def _clear_cached_op(self):
        self._cached_graph = ()
        self._cached_op = None

    def _get_graph(self, *args):
        if not self._cached_graph:
            self._cached_graph, self._in_format, self._out_format = trace(self, args)
        return self._cached_graph

    def infer_shape(self, *args) -> None:
        """Fill in the unknown parameter shapes from the inputs `args`."""
        self._infer_attrs("infer_shape", "shape", *args)

    def infer_type(self, *args) -> None:
        """Fill in the parameter dtypes from the inputs `args`."""
        self._infer_attrs("infer_type", "dtype", *args)

    def _infer_attrs(self, infer_fn, attr, *args):
        inputs, out = self._get_graph(*args)
        flat, _ = flatten(args, "input")
        given = {i.name: getattr(j, attr) for i, j in zip(inputs, flat) if j is not None}
        arg_attrs, _, aux_attrs = getattr(out, infer_fn)(**given)
        if arg_attrs is None:
            raise GluonValueError(f"{infer_fn}: the inputs {given} do not determine every parameter's {attr}")
        sdict = dict(zip(out.list_arguments(), arg_attrs))
        sdict.update(zip(out.list_auxiliary_states(), aux_attrs))
        for p in self.collect_params().values():
            if p.name in sdict:
                if attr == "dtype":
                    p._dtype = sdict[p.name]
                else:
                    setattr(p, attr, sdict[p.name])

    def _deferred_infer_shape(self, *args):
        try:
            self.infer_shape(*args)
        except Exception as e:
            raise GluonValueError(f"Deferred initialization failed because shape cannot be inferred. {e}") from e

    def _call_cached_op(self, *args):
        flat, fmt = flatten(args, "input")
        if self._cached_op is None:
            inputs, out = self._get_graph(*args)
            self._cached_op = CachedGraph(self, inputs, out, {i for i, a in enumerate(flat) if a is None})
            self._cached_op.op_hook = self._op_hook
        elif strip_none(fmt) != strip_none(self._in_format):
            raise GluonValueError(f"The arguments' structure {fmt} differs from the one this hybridized block was "
                                  f"traced with, {self._in_format}: call hybridize() again to retrace")
        return self._cached_op(args, self._out_format)

    def forward(self, x, *args):
        """Run `hybrid_forward` on NDArrays (compiled when hybridized) or compose Symbols."""
        given = leaves([x] + list(args))
        has_sym = any(isinstance(a, Symbol) for a in given)
        has_nd = any(isinstance(a, NDArray) for a in given)
        if has_sym and has_nd:
            raise GluonValueError("In HybridBlock, we do not support mixed NDArrays and Symbols types for the "
                                  "input. Please check the type of the args.\n")
        if not has_sym and not has_nd:
            raise GluonValueError("In HybridBlock, there must be one NDArray or one Symbol in the input. Please "
                                  "check the type of the args.\n")
        if has_nd:
            ctx = next(a for a in given if isinstance(a, NDArray)).context
            if self._active:
                _check_one_context(given)
            with ctx:
                if self._active:
                    return self._call_cached_op(x, *args)
                try:
                    params = {k: v.data(ctx) for k, v in self._reg_params.items()}
                except DeferredInitializationError:
                    self._deferred_infer_shape(x, *args)
                    for v in self.params.values():
                        v._finish_deferred_init()
                    params = {k: v.data(ctx) for k, v in self._reg_params.items()}
                return self.hybrid_forward(nd, x, *args, **params)
        params = {k: v.var() for k, v in self._reg_params.items()}
        with self.name_scope():
            return self.hybrid_forward(sym_mod, x, *args, **params)

    def hybrid_forward(self, F, x, *args, **kwargs):
        """The computation, written once for `F = mx.nd` and `F = mx.sym`; subclasses override it."""
        raise NotImplementedError

    def optimize_for(self, x, *args, backend=None, **kwargs):
        """MXNet's subgraph-backend partitioning; jbind compiles through XLA (an MXNetError)."""
        raise MXNetError(f"optimize_for(backend={backend!r}): jbind has no subgraph backends; hybridize() "
                         "compiles the whole block with XLA")

    def export(self, path, epoch=0, remove_amp_cast=True):
        """Write `path-symbol.json` and `path-%04d.params` (names 'arg:...' / 'aux:...'), which
        `mx.model.load_checkpoint`, Module and `SymbolBlock.imports` load. Needs one forward
        after `hybridize()`. Returns the two file names."""
        if not self._cached_graph:
            raise RuntimeError("Please first call block.hybridize() and then run forward with this block at least "
                               "once before calling export.")
        out = self._cached_graph[1]
        sym_file = f"{path}-symbol.json"
        out.save(sym_file, remove_amp_cast=remove_amp_cast)
        arg_names = set(out.list_arguments())
        aux_names = set(out.list_auxiliary_states())
        arg_dict = {}
        for name, param in self.collect_params().items():
            if name in arg_names:
                arg_dict[f"arg:{name}"] = param._reduce()
            elif name in aux_names:
                arg_dict[f"aux:{name}"] = param._reduce()
        params_file = f"{path}-{epoch:04d}.params"
        nd.save(params_file, arg_dict)
        return sym_file, params_file


from ._symbol_block import SymbolBlock  # noqa: E402  (it subclasses HybridBlock)


def _check_one_context(given) -> None:
    """A hybridized call takes its NDArrays from one context (cpu_pinned and cpu_shared count
    as cpu(0)), as MXNet's: else a GluonValueError listing them."""
    def norm(c):
        return ("cpu", 0) if c.device_type in ("cpu_pinned", "cpu_shared") else (c.device_type, c.device_id)
    found = {norm(a.context): a.context for a in given if isinstance(a, NDArray)}
    if len(found) > 1:
        raise GluonValueError("Find multiple contexts in the input, After hybridized, the HybridBlock only "
                              "supports one input context. You can print the ele.ctx in the input arguments "
                              f"to inspect their contexts. Find all contexts = {set(found.values())}")
