"""Automatic mixed precision (MXNet's `mxnet.contrib.amp.amp`): run the ops that gain from
it in float16 or bfloat16 and the rest in float32, by inserting `amp_cast` /
`amp_multicast` nodes, either into a finished graph (`convert_symbol`, `convert_model`)
or as a script builds it (`init`)."""
from __future__ import annotations

import contextlib
import logging

import numpy as np

from ... import ndarray, symbol
from ...base import DTYPE_MX_TO_NP, MXNetError, np_dtype
from ...symbol.symbol import Symbol
from . import _convert, _wrap, lists
from .loss_scaler import LossScaler

__all__ = ["init", "init_trainer", "scale_loss", "unscale", "convert_model", "convert_hybrid_block",
           "list_lp16_ops", "list_fp32_ops", "list_lp16_fp32_ops", "list_conditional_fp32_ops",
           "list_widest_type_cast", "list_loss_output_functions", "list_lp16_use_fp32_params",
           "convert_symbol"]

_TARGETS = ("float16", "bfloat16")
_amp_initialized = False
_amp_loss_scale_initialized = False
_loss_scaler = None


def _target_name(target_dtype) -> str:
    try:
        name = np_dtype(target_dtype).name
    except MXNetError:
        name = None
    if name not in _TARGETS:
        raise MXNetError(f"AMP supports only float16 or bfloat16 as target_dtype, got {target_dtype!r}")
    return name


def _lists(target_dtype):
    return lists.symbol_fp16 if _target_name(target_dtype) == "float16" else lists.symbol_bf16


def list_lp16_ops(target_dtype) -> list:
    """The ops AMP runs in `target_dtype` (float16 or bfloat16) by default."""
    m = _lists(target_dtype)
    return list(m.FP16_FUNCS if m is lists.symbol_fp16 else m.BF16_FUNCS)


def list_fp32_ops(target_dtype) -> list:
    """The ops AMP runs in float32 by default."""
    return list(_lists(target_dtype).FP32_FUNCS)


def list_lp16_fp32_ops(target_dtype) -> list:
    """The ops AMP leaves in whichever dtype their inputs have."""
    m = _lists(target_dtype)
    return list(m.FP16_FP32_FUNCS if m is lists.symbol_fp16 else m.BF16_FP32_FUNCS)


def list_conditional_fp32_ops(target_dtype) -> list:
    """(op, parameter, values): ops AMP runs in float32 when the parameter has one of the values."""
    return [(a, p, list(v)) for a, p, v in _lists(target_dtype).CONDITIONAL_FP32_FUNCS]


def list_widest_type_cast(target_dtype) -> list:
    """The ops whose inputs AMP casts to the widest dtype among them."""
    return list(_lists(target_dtype).WIDEST_TYPE_CASTS)


def list_loss_output_functions(target_dtype) -> list:
    """The loss heads whose gradient `init` scales by the dynamic loss scale (mx.nd)."""
    return list(_lists(target_dtype).LOSS_OUTPUT_FUNCTIONS)


def list_lp16_use_fp32_params(target_dtype):
    """{op: input names kept float32} for bfloat16; None for float16 (as MXNet)."""
    if _target_name(target_dtype) == "float16":
        return None
    return {k: list(v) for k, v in lists.symbol_bf16.BF16_USE_FP32_PARAMS.items()}


def init(target_dtype="float16", target_precision_ops=None, conditional_fp32_ops=None, fp32_ops=None):
    """Turn AMP on for graphs and arrays built from now on (once per process, as MXNet).

    The `mx.sym` / `mx.nd` functions of the listed ops are replaced by ones that cast
    their inputs: to `target_dtype` for `target_precision_ops` (default
    `list_lp16_ops`), to float32 for `fp32_ops` and for `conditional_fp32_ops` whose
    parameter has a listed value, and to the widest dtype among them for
    `list_widest_type_cast`. mx.nd's loss heads get the dynamic loss scale as their
    `grad_scale`. Unlike MXNet, Python operators on Symbols and NDArrays (`a + b`) and
    fluent methods are not wrapped.
    """
    global _amp_initialized, _loss_scaler
    if _amp_initialized:
        return
    name = _target_name(target_dtype)
    target = np_dtype(name)
    _amp_initialized = True
    logging.info("Using AMP")
    tp = list(target_precision_ops) if target_precision_ops is not None else list_lp16_ops(name)
    f32 = list(fp32_ops) if fp32_ops is not None else list_fp32_ops(name)
    cond = list(conditional_fp32_ops) if conditional_fp32_ops is not None else list_conditional_fp32_ops(name)
    keep = list_lp16_use_fp32_params(name) or {}
    for module, symbolic in ((symbol, True), (ndarray, False)):
        _wrap.wrap(module, symbolic, target, tp, cond, f32, list_widest_type_cast(name), keep)
    _loss_scaler = LossScaler()
    _wrap.wrap_loss_outputs(ndarray, False, _loss_scaler, list_loss_output_functions(name))
    _wrap.wrap_loss_outputs(symbol, True, _loss_scaler, list_loss_output_functions(name))


def _reset():
    """Undo `init` (jbind's tests use it; MXNet cannot)."""
    global _amp_initialized, _amp_loss_scale_initialized, _loss_scaler
    _wrap.restore()
    _amp_initialized = _amp_loss_scale_initialized = False
    _loss_scaler = None


def _trainer_class():
    try:
        from ...gluon import Trainer  # noqa: PLC0415 - gluon sits above contrib
    except ImportError:
        raise MXNetError("amp.init_trainer needs Gluon's Trainer (mx.gluon.Trainer), which jbind does not "
                         "provide yet") from None
    return Trainer


def init_trainer(optimizer_or_trainer):
    """Give a Gluon Trainer AMP's dynamic loss scaler (after `init`). The Trainer skips a
    step whose gradients overflow and `scale_loss` scales the loss."""
    global _amp_loss_scale_initialized
    if not _amp_initialized:
        raise MXNetError("AMP not initialized, did you forget to call amp.init()?")
    from ...optimizer import Optimizer
    if isinstance(optimizer_or_trainer, Optimizer):
        raise MXNetError("AMP is currently only compatible with Gluon Trainer, got an Optimizer")
    trainer_cls = _trainer_class()
    if not isinstance(optimizer_or_trainer, trainer_cls):
        raise MXNetError(f"optimizer_or_trainer should be a Gluon Trainer, got {type(optimizer_or_trainer).__name__}")
    if not _amp_loss_scale_initialized:
        _amp_loss_scale_initialized = True
        scaler = _loss_scaler
    else:
        scaler = LossScaler()
    optimizer_or_trainer._amp_loss_scaler = scaler
    optimizer_or_trainer._amp_original_scale = optimizer_or_trainer._scale


@contextlib.contextmanager
def scale_loss(loss, optimizer_or_trainer):
    """Yield `loss` (or a list of losses) times the loss scale, and set the trainer to
    divide the gradients by it."""
    scaler = getattr(optimizer_or_trainer, "_amp_loss_scaler", None)
    if scaler is None:
        raise MXNetError("Loss scaler is not initialized, did you forget to call amp.init_trainer()?")
    optimizer_or_trainer._scale = optimizer_or_trainer._amp_original_scale / scaler.loss_scale
    if isinstance(loss, (list, tuple)):
        yield [x * scaler.loss_scale for x in loss]
    else:
        yield scaler.loss_scale * loss


def unscale(optimizer_or_trainer):
    """Divide the gradients by the loss scale now (before clipping them, for example)."""
    trainer_cls = _trainer_class()
    if not isinstance(optimizer_or_trainer, trainer_cls):
        raise MXNetError(f"AMP is currently only compatible with Gluon Trainer, got "
                         f"{type(optimizer_or_trainer).__name__}")
    for p in optimizer_or_trainer._params:
        for g in getattr(p, "_grad", None) or ():
            g[:] *= optimizer_or_trainer._scale
    optimizer_or_trainer._scale = 1.0


def _names(value, what):
    if value is None:
        return None
    if not isinstance(value, (list, tuple)):
        raise MXNetError(f"{what} should be a list of strings, got {type(value).__name__}")
    return list(value)


def convert_symbol(sym, target_dtype="float16", target_dtype_ops=None, fp32_ops=None, conditional_fp32_ops=None,
                   excluded_sym_names=None, data_names=None, cast_optional_params=False):
    """A float32 symbol rewritten for mixed precision: `amp_cast` / `amp_multicast` nodes
    where the op lists say (the defaults: `list_lp16_ops` etc.). `excluded_sym_names`:
    nodes that stay float32. `data_names`: the inputs that are data (default: those
    without a `__dtype__` attribute); with `cast_optional_params`, the other inputs
    (parameters) that feed a target-dtype op are not cast but stored in that dtype (their
    `__dtype__` says which)."""
    if not isinstance(sym, Symbol):
        raise MXNetError(f"First argument to convert_symbol should be Symbol, got {type(sym).__name__}")
    target = _target_name(target_dtype) if target_dtype in _TARGETS else None
    if target is None:
        raise MXNetError(f"Only target_dtype float16 and bfloat16 are supported, got {target_dtype!r}")
    tp = _names(target_dtype_ops, "target_dtype_ops") or (list_lp16_ops(target) if target_dtype_ops is None else [])
    f32 = _names(fp32_ops, "fp32_ops")
    f32 = list_fp32_ops(target) if f32 is None else f32
    cond = list_conditional_fp32_ops(target) if conditional_fp32_ops is None else conditional_fp32_ops
    if not isinstance(cond, list) or not all(
            isinstance(c, (list, tuple)) and len(c) == 3 and isinstance(c[0], str) and isinstance(c[1], str)
            and isinstance(c[2], list) for c in cond):
        raise MXNetError("conditional_fp32_ops should be a list of (str, str, list of str)")
    excluded = _names(excluded_sym_names, "excluded_sym_names") or []
    cond_names = [c[0] for c in cond]
    for a, b, sa, sb in ((tp, f32, "target_dtype_ops", "fp32_ops"), (tp, cond_names, "target_dtype_ops",
                         "conditional_fp32_ops"), (cond_names, f32, "conditional_fp32_ops", "fp32_ops")):
        common = set(a) & set(b)
        if common:
            raise MXNetError(f"Ops cannot be in two or more lists. Common ops in {sa} and {sb}: {sorted(common)}")
    known = set(list_lp16_ops(target) + list_fp32_ops(target) + list_lp16_fp32_ops(target)
                + [c[0] for c in list_conditional_fp32_ops(target)])
    illegal = set(tp + f32 + cond_names) - known
    if illegal:
        raise MXNetError(f"Op(s) {sorted(illegal)} are in none of amp.list_lp16_ops, list_fp32_ops, "
                         "list_lp16_fp32_ops, list_conditional_fp32_ops")
    attrs = sym.attr_dict()
    if data_names is None:
        data_names = [n for n in sym.list_inputs() if "__dtype__" not in attrs.get(n, {})]
    model_params = set(sym.list_inputs()) - set(data_names)
    conditional: dict = {}
    for op, param, values in cond:
        conditional.setdefault(_convert.ALIASES.get(op, op), []).append((param, [str(v) for v in values]))
    heads = _convert.reduce_precision(
        sym, target, _convert.canonical(tp), _convert.canonical(f32),
        _convert.canonical(list_widest_type_cast(target)), conditional, set(excluded), set(data_names),
        bool(cast_optional_params))
    return _convert.set_param_dtypes(Symbol(heads), target, data_names, model_params, bool(cast_optional_params))


def _cast_params(params: dict, sym: Symbol, names) -> dict:
    attrs = sym.attr_dict()
    for name in names:
        code = attrs.get(name, {}).get("__dtype__")
        if name in params and code not in (None, "-1"):
            t = np.dtype(DTYPE_MX_TO_NP[int(code)])
            if params[name].dtype != t:
                params[name] = params[name].astype(t)
    return params


def convert_model(sym, arg_params, aux_params, target_dtype="float16", target_dtype_ops=None, fp32_ops=None,
                  conditional_fp32_ops=None, excluded_sym_names=None, cast_optional_params=False):
    """`convert_symbol` for a model, with its parameters cast to the dtypes the converted
    symbol records for them. -> (symbol, arg_params, aux_params); the dicts are updated
    in place, as MXNet's."""
    if not isinstance(sym, Symbol):
        raise MXNetError(f"First argument to convert_model should be Symbol, got {type(sym).__name__}")
    if not isinstance(arg_params, dict) or not isinstance(aux_params, dict):
        raise MXNetError("arg_params and aux_params should be dicts of name to NDArray")
    params = set(arg_params) | set(aux_params)
    data_names = [n for n in sym.list_inputs() if n not in params]
    sym = convert_symbol(sym, target_dtype, target_dtype_ops, fp32_ops, conditional_fp32_ops,
                         excluded_sym_names, data_names, cast_optional_params)
    _cast_params(arg_params, sym, sym.list_arguments())
    _cast_params(aux_params, sym, sym.list_auxiliary_states())
    return sym, arg_params, aux_params


def convert_hybrid_block(block, *args, **kwargs):
    """MXNet converts a hybridized Gluon block; jbind's Gluon cannot be converted yet."""
    raise MXNetError("amp.convert_hybrid_block is not supported by jbind yet; convert the block's exported "
                     "symbol and parameters with amp.convert_model")
