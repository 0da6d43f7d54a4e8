"""Gluon's `Parameter` and `Constant`: a named array per context, with deferred shapes.

A Parameter's arrays are NDArray handles, as the Module path's parameters are: a
hybridized block's executor reads the handle's current `jax.Array`, so `set_data` (which
writes through the handle) is seen by every holder. Gradient buffers are allocated per
`grad_req` when the data is; `mx.autograd` (when present) is told about them.
"""
from __future__ import annotations

import warnings

import numpy as np

from .. import initializer
from .. import ndarray as nd
from ..base import MXNetError, np_dtype
from ..context import Context, cpu, current_context
from ..ndarray.ndarray import NDArray
from ._util import GluonTypeError, GluonValueError, check, shape_complete

__all__ = ["DeferredInitializationError", "Parameter", "Constant", "tensor_types"]

tensor_types = (NDArray,)


class DeferredInitializationError(MXNetError):
    """A Parameter's data was read before its deferred initialization finished."""


def _mark_variables(data, grads, grad_req) -> None:
    """Attach gradient buffers for `mx.autograd`, if jbind has it (the seam training uses)."""
    from ._cached_graph import autograd_module
    mark = getattr(autograd_module(), "mark_variables", None)
    if mark is not None:
        mark(data, grads, grad_req)


class Parameter:
    """A model weight: MXNet's `mx.gluon.Parameter`.

    Args:
        name: the full name (prefix included), e.g. 'dense0_weight'.
        grad_req: 'write', 'add' or 'null' (no gradient buffer).
        shape: a tuple whose 0 entries are unknown until the first forward fills them.
        dtype: the data type (default float32).
        lr_mult, wd_mult: the optimizer's multipliers for this weight.
        init: this weight's initializer (an Initializer or its registered name).
        allow_deferred_init: whether `initialize` may wait for an unknown shape.
        differentiable: False forces grad_req 'null'.
        stype: the data's storage type: 'default' or 'row_sparse' (then read the data
            with `row_sparse_data`, which pulls rows from the Trainer's kvstore).
        grad_stype: the gradient's storage type ('default' or 'row_sparse').
    """

    def __init__(self, name, grad_req="write", shape=None, dtype=np.float32, lr_mult=1.0, wd_mult=1.0,
                 init=None, allow_deferred_init=False, differentiable=True, stype="default",
                 grad_stype="default"):
        self._var = None
        self._data = None
        self._grad = None
        self._ctx_list = None
        self._ctx_map = None
        self._trainer = None
        self._deferred_init = ()
        self._differentiable = differentiable
        self._allow_deferred_init = allow_deferred_init
        self._grad_req = None
        self._shape = (shape,) if isinstance(shape, int) else (tuple(shape) if shape is not None else None)
        self.name = name
        self._dtype = dtype
        self.lr_mult = lr_mult
        self.wd_mult = wd_mult
        self.grad_req = grad_req
        self.init = init
        for what, st in (("stype", stype), ("grad_stype", grad_stype)):
            check(st in ("default", "row_sparse", "csr"), f"{what} for Parameter '{name}' must be one of "
                  f"'default', 'row_sparse', or 'csr', but got '{st}'")
        self._grad_stype = grad_stype
        self._stype = stype

    def __repr__(self):
        return f"Parameter {self.name} (shape={self.shape}, dtype={self.dtype})"

    # --- attributes ---------------------------------------------------------------------
    @property
    def grad_req(self) -> str:
        return self._grad_req

    @grad_req.setter
    def grad_req(self, req):
        check(req in ("write", "add", "null"), f"grad_req must be one of 'write', 'add', or 'null', but got '{req}'")
        if not self._differentiable:
            req = "null"
        if self._grad_req == req:
            return
        self._grad_req = req
        if req == "null" and self._grad is not None:
            self._grad = None
            self._data = [NDArray(d._data) for d in self._data]  # MXNet's detach: no longer a marked variable
        elif self._data is not None:
            self._init_grad()

    @property
    def dtype(self):
        """The data type; setting it casts the data (as `cast`)."""
        return self._dtype

    @dtype.setter
    def dtype(self, dtype):
        self.cast(dtype)

    @property
    def shape(self):
        """The shape; 0 marks a dimension not known yet."""
        return self._shape

    @shape.setter
    def shape(self, new_shape):
        new_shape = tuple(new_shape) if new_shape is not None else None
        if self._shape is None:
            self._shape = new_shape
            return
        check(len(self._shape) == len(new_shape) and all(j in (-1, 0, i) for i, j in zip(new_shape, self._shape)),
              f"Expected shape {new_shape!s} is incompatible with given shape {self._shape!s}.")
        self._shape = new_shape

    @property
    def stype(self) -> str:
        """The storage type of the data ('default' or 'row_sparse')."""
        return self._stype

    @property
    def grad_stype(self) -> str:
        """The storage type of the gradient ('default' or 'row_sparse')."""
        return self._grad_stype

    def _set_trainer(self, trainer) -> None:
        """Tie this parameter to `trainer` (or untie it with None); a sparse parameter has one Trainer."""
        if self._stype != "default" and self._trainer is not None and trainer is not None \
                and self._trainer is not trainer:
            raise MXNetError(f"Failed to set the trainer for Parameter '{self.name}' because it was already set. "
                             f"More than one trainers for a {self._stype} Parameter is not supported.")
        self._trainer = trainer

    # --- access ---------------------------------------------------------------------------
    def _check_and_get(self, arr_list, ctx):
        if arr_list is not None:
            if ctx is list:
                return arr_list
            if ctx is None:
                if len(arr_list) == 1:
                    return arr_list[0]
                ctx = current_context()
            ctx_list = self._ctx_map[ctx.device_typeid & 1]
            if ctx.device_id < len(ctx_list) and ctx_list[ctx.device_id] is not None:
                return arr_list[ctx_list[ctx.device_id]]
            raise MXNetError(f"Parameter '{self.name}' was not initialized on context {ctx!s}. "
                             f"It was only initialized on {self._ctx_list!s}.")
        if self._deferred_init:
            raise DeferredInitializationError(
                f"Parameter '{self.name}' has not been initialized yet because initialization was deferred. "
                "Actual initialization happens during the first forward pass. Please pass one batch of data "
                "through the network before accessing Parameters. You can also avoid deferred initialization "
                "by specifying in_units, num_features, etc., for network layers.")
        raise MXNetError(f"Parameter '{self.name}' has not been initialized. Note that you should initialize "
                         "parameters and create Trainer with Block.collect_params() instead of Block.params "
                         "because the later does not include Parameters of nested child Blocks")

    def _check_dense(self, what) -> None:
        if self._stype != "default":
            raise MXNetError(f"Cannot return a copy of Parameter '{self.name}' via {what}() because its storage "
                             f"type is {self._stype}. Please use row_sparse_data() instead.")

    def data(self, ctx=None) -> NDArray:
        """This parameter's array on `ctx` (the only one, or the current context's)."""
        self._check_dense("data")
        return self._check_and_get(self._data, ctx)

    def list_data(self) -> list:
        """The arrays on every context, in `list_ctx()` order."""
        self._check_dense("list_data")
        return self._check_and_get(self._data, list)

    def grad(self, ctx=None) -> NDArray:
        """The gradient buffer on `ctx`; an error when grad_req is 'null'."""
        if self._data is not None and self._grad is None:
            raise MXNetError(f"Cannot get gradient array for Parameter '{self.name}' because grad_req='null'")
        return self._check_and_get(self._grad, ctx)

    def list_grad(self) -> list:
        """The gradient buffers on every context."""
        if self._data is not None and self._grad is None:
            raise MXNetError(f"Cannot get gradient array for Parameter '{self.name}' because grad_req='null'")
        return self._check_and_get(self._grad, list)

    def row_sparse_data(self, row_id):
        """A row_sparse parameter's array on `row_id`'s context, holding (at least) the rows
        listed in `row_id`, pulled from the Trainer's kvstore (which holds the weight)."""
        self._check_sparse("row_sparse_data")
        return self._get_row_sparse(row_id.context, row_id)

    def list_row_sparse_data(self, row_id):
        """`row_sparse_data` on every context, in `list_ctx()` order."""
        self._check_sparse("list_row_sparse_data")
        return self._get_row_sparse(list, row_id)

    def _check_sparse(self, what) -> None:
        if self._stype != "row_sparse":
            raise MXNetError(f"Cannot return a copy of Parameter {self.name} via {what}() because its storage "
                             f"type is {self._stype}. Please use data() instead.")

    def _get_row_sparse(self, ctx, row_id):
        if not isinstance(row_id, NDArray):
            raise GluonTypeError(f"row_id must have NDArray type, but {type(row_id)} is given")
        if self._trainer is None:
            raise MXNetError(f"Cannot get row_sparse data for Parameter '{self.name}' when no Trainer is created "
                             "with it.")
        results = self._check_and_get(self._data, ctx)
        self._trainer._row_sparse_pull(self, results, row_id)
        return results

    def list_ctx(self) -> list:
        """The contexts this parameter lives (or will live, once initialized) on."""
        if self._data is None:
            if self._deferred_init:
                return self._deferred_init[1]
            raise MXNetError(f"Parameter '{self.name}' has not been initialized")
        return self._ctx_list

    def zero_grad(self) -> None:
        """Set every gradient buffer to 0 (nothing when grad_req is 'null')."""
        if self._grad is None:
            return
        for g in self._grad:
            g[:] = 0

    # --- initialization ---------------------------------------------------------------------
    def initialize(self, init=None, ctx=None, default_init=None, force_reinit=False) -> None:
        """Create the data on `ctx` (a Context or a list; default the current one), filled
        by `init`, else this parameter's own `init`, else `default_init` (Uniform). With
        a shape still unknown (0 entries), waits for the first forward if allowed."""
        if default_init is None:
            default_init = initializer.Uniform()
        if self._data is not None and not force_reinit:
            warnings.warn(f"Parameter '{self.name}' is already initialized, ignoring. Set force_reinit=True to "
                          "re-initialize.", stacklevel=2)
            return
        self._data = self._grad = None
        if ctx is None:
            ctx = [current_context()]
        if isinstance(ctx, Context):
            ctx = [ctx]
        if init is None:
            init = default_init if self.init is None else self.init
        if not shape_complete(self.shape):
            if self._allow_deferred_init:
                self._deferred_init = (init, ctx, default_init, None)
                return
            raise GluonValueError(f"Cannot initialize Parameter '{self.name}' because it has invalid shape: "
                                  f"{self.shape!s}.")
        self._deferred_init = (init, ctx, default_init, None)
        self._finish_deferred_init()

    def _finish_deferred_init(self) -> None:
        if not self._deferred_init:
            return
        init, ctx, default_init, data = self._deferred_init
        self._deferred_init = ()
        check(shape_complete(self.shape), f"Cannot initialize Parameter '{self.name}' because it has invalid "
              f"shape: {self.shape!s}. Please specify in_units, in_channels, etc for `Block`s.")
        if data is None:
            data = nd.zeros(self.shape, dtype=self.dtype, ctx=cpu(), stype=self._stype)
            initializer.create(default_init)(initializer.InitDesc(self.name, {"__init__": init}), data)
        self._init_impl(data, ctx)

    def _init_impl(self, data, ctx_list) -> None:
        self._ctx_list = list(ctx_list)
        self._ctx_map = [[], []]
        for i, ctx in enumerate(self._ctx_list):
            dev_list = self._ctx_map[ctx.device_typeid & 1]
            while len(dev_list) <= ctx.device_id:
                dev_list.append(None)
            dev_list[ctx.device_id] = i
        self._data = [data.copyto(ctx) for ctx in self._ctx_list]
        self._init_grad()

    def _init_grad(self) -> None:
        if self.grad_req == "null":
            self._grad = None
            return
        self._grad = [nd.zeros(d.shape, dtype=d.dtype, ctx=d.context, stype=self._grad_stype) for d in self._data]
        _mark_variables(self._data, self._grad, self.grad_req)

    def _load_init(self, data, ctx, cast_dtype=False, dtype_source="current") -> None:
        """(Re)initialize from the loaded array `data`, checking shape and dtype."""
        if cast_dtype:
            check(dtype_source in ("current", "saved"), f"dtype_source must be 'current' or 'saved', "
                  f"not {dtype_source!r}")
        if self.shape:
            for mine, theirs in zip(self.shape, data.shape):
                check(mine in (0, -1, theirs), f"Failed loading Parameter '{self.name}' from saved params: "
                      f"shape incompatible expected {self.shape!s} vs saved {data.shape!s}")
            self.shape = tuple(t if m in (0, -1) else m for m, t in zip(self.shape, data.shape))
        if self.dtype:
            if cast_dtype and np_dtype(self.dtype) != np.dtype(data.dtype):
                if dtype_source == "current":
                    data = data.astype(self.dtype, copy=False)
                else:  # casts the arrays already held too, as MXNet's dtype setter does
                    self.dtype = data.dtype
            else:
                check(np_dtype(self.dtype) == np.dtype(data.dtype), f"Failed loading Parameter '{self.name}' "
                      f"from saved params: dtype incompatible expected {self.dtype!s} vs saved {data.dtype!s}. "
                      "Set cast_dtype=True to cast the dtype of saved params.")
        if data.stype != self._stype:
            data = data.tostype(self._stype)
        if isinstance(ctx, Context):
            ctx = [ctx]
        if self._data is None:
            if self._deferred_init:
                check(ctx is None or set(ctx) == set(self._deferred_init[1]), f"Failed to load Parameter "
                      f"'{self.name}' on {ctx!s} because it was previous initialized on {self.list_ctx()!s}.")
                ctx = self._deferred_init[1]
            elif ctx is None:
                ctx = [cpu()]
            self._init_impl(data, ctx)
        else:
            check(ctx is None or set(ctx) == set(self.list_ctx()), f"Failed to load Parameter '{self.name}' "
                  f"on {ctx!s} because it was previous initialized on {self.list_ctx()!s}.")
            self.set_data(data)
        self._deferred_init = ()

    def set_data(self, data) -> None:
        """Write `data` into the array on every context (or keep it for a deferred init)."""
        self.shape = data.shape
        if self._data is None:
            check(self._deferred_init, f"Parameter '{self.name}' has not been initialized")
            self._deferred_init = self._deferred_init[:3] + (data if isinstance(data, NDArray) else nd.array(data),)
            return
        trainer = self._trainer
        if trainer is not None and trainer._kv_initialized and trainer._update_on_kvstore \
                and self not in trainer._params_to_init:
            trainer._reset_kvstore()   # as MXNet: a kvstore holding the old values is dropped
        for arr in self._check_and_get(self._data, list):
            arr[:] = data

    def reset_ctx(self, ctx) -> None:
        """Move the data (averaged over the old contexts) to `ctx`."""
        if ctx is None:
            ctx = [current_context()]
        if isinstance(ctx, Context):
            ctx = [ctx]
        if self._data:
            self._init_impl(self._reduce(), ctx)
        elif self._deferred_init:
            init, _, default_init, data = self._deferred_init
            self._deferred_init = (init, ctx, default_init, data)
        else:
            raise GluonValueError(f"Cannot reset context for Parameter '{self.name}' because it has not been "
                                  "initialized.")

    def _reduce(self) -> NDArray:
        """The mean of the copies, on cpu(0) (what is saved); a row_sparse parameter's whole
        weight, pulled from its Trainer's kvstore."""
        if self._stype != "default":
            if self._trainer is None:
                raise MXNetError(f"Cannot reduce row_sparse parameter {self.name} because no Trainer is created "
                                 "with it.")
            data = nd.zeros(self.shape, stype=self._stype, dtype=self.dtype, ctx=cpu())
            self._trainer._row_sparse_pull(self, data, nd.arange(0, self.shape[0], ctx=cpu()), full_idx=True)
            return data
        block = self.list_data()
        if len(block) == 1:
            return block[0].copyto(cpu())
        return nd.add_n(*(w.copyto(cpu()) for w in block)) / len(block)

    def var(self):
        """The Symbol variable standing for this parameter in a traced graph."""
        if self._var is None:
            from .. import symbol
            self._var = symbol.var(self.name, shape=self.shape, dtype=self.dtype, lr_mult=self.lr_mult,
                                   wd_mult=self.wd_mult, init=self.init, stype=self._stype)
        return self._var

    def cast(self, dtype) -> None:
        """Change the dtype of the data and gradient buffers."""
        self._dtype = dtype
        self._var = None
        if self._data is None:
            return
        self._data = [d.astype(dtype) for d in self._data]
        if self._grad is None:
            return
        self._grad = [g.astype(dtype) for g in self._grad]
        _mark_variables(self._data, self._grad, self.grad_req)


class Constant(Parameter):
    """A parameter that never changes (grad_req 'null'), initialized to `value`."""

    def __init__(self, name, value):
        if not isinstance(value, NDArray):
            value = nd.array(value)
        self.value = value

        class _Init(initializer.Initializer):
            def _init_weight(self, _, arr):
                value.copyto(arr)
        init_name = f"Constant_{name}_{id(self)}"
        initializer.alias(init_name)(_Init)
        super().__init__(name, grad_req="null", shape=value.shape, dtype=value.dtype, init=init_name)

    def __repr__(self):
        return f"Constant {self.name} (shape={self.shape}, dtype={self.dtype})"

    @property
    def grad_req(self) -> str:
        return "null"

    @grad_req.setter
    def grad_req(self, req):
        if req != "null":
            warnings.warn(f'Constant parameter "{self.name}" does not support grad_req other than "null", and new '
                          f'value "{req}" is ignored.', stacklevel=2)
        self._grad_req = "null"


from ._parameter_dict import ParameterDict  # noqa: E402,F401  (MXNet's gluon.parameter has it too)
