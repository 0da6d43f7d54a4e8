"""`SymbolBlock`: a HybridBlock made from a Symbol (e.g. a model `export` wrote)."""
from __future__ import annotations

import os

import numpy as np

from .. import symbol as sym_mod
from ..base import DTYPE_MX_TO_NP as _MX_DTYPE, MXNetError
from ..ndarray.ndarray import NDArray
from ..symbol.symbol import Symbol
from ._parameter_dict import ParameterDict
from ._util import check, flatten, regroup
from .block import HybridBlock

__all__ = ["SymbolBlock"]


def _common_prefix(names):
    if not names:
        return ""
    prefix = names[0]
    for n in names:
        i = 0
        while i < len(prefix) and i < len(n) and prefix[i] == n[i]:
            i += 1
        prefix = prefix[:i]
    return prefix


class SymbolBlock(HybridBlock):
    """A block that runs the graph `outputs` on the variables `inputs`; every other
    argument and aux state of the graph becomes a parameter (deferred until the first
    forward tells its shape). It runs compiled, as a hybridized block does.

    Args:
        outputs: a Symbol, or a list of Symbols.
        inputs: the input Variable(s).
        params: a ParameterDict to share parameters from.
    """

    @staticmethod
    def imports(symbol_file, input_names, param_file=None, ctx=None, allow_missing=False, ignore_extra=False):
        """A SymbolBlock from `symbol_file` (a -symbol.json), with parameters from `param_file`
        (a .params file as `export` or `save_checkpoint` writes) loaded onto `ctx`."""
        if not os.path.exists(symbol_file):
            raise MXNetError(f"SymbolBlock.imports: symbol file {symbol_file!r} does not exist")
        out = sym_mod.load(symbol_file)
        if isinstance(input_names, str):
            input_names = [input_names]
        if param_file is None:
            inputs = [sym_mod.var(n, dtype=np.float32) for n in input_names]
        else:
            inputs = [sym_mod.var(n) for n in input_names]
        ret = SymbolBlock(out, inputs)
        if param_file is not None:
            ret.collect_params().load(param_file, ctx, allow_missing, ignore_extra, cast_dtype=True,
                                      dtype_source="saved")
        return ret

    def __init__(self, outputs, inputs, params=None):
        super().__init__(prefix=None, params=None)
        self._prefix = ""
        self._params = ParameterDict("", params)
        if isinstance(inputs, Symbol) and len(inputs.list_outputs()) == 1:
            inputs = [inputs]
        if isinstance(outputs, (list, tuple)) and len(outputs) == 1:
            outputs = outputs[0]
        syms, self._in_format = flatten(inputs, "input")
        out, self._out_format = flatten(outputs, "output")
        out = sym_mod.Group(out)
        input_names = set()
        for s in syms:
            check(len(s.get_internals().list_outputs()) == 1,
                  f"Input symbols must be variable, but {s!s} is an output of operators")
            input_names.add(s.name)
        for node in out.get_internals():
            check(node.attr("__storage_type__") not in ("1", "row_sparse"), f"SymbolBlock doesn't support "
                  f"Parameter '{node.name}' because its storage type is 'row_sparse'.")
        arg_names = out.list_arguments()
        aux_names = out.list_auxiliary_states()
        arg_types, aux_types = _param_types(syms, out)
        for name, t in zip(arg_names, arg_types):
            if name not in input_names:
                self.params.get(name, allow_deferred_init=True, dtype=t)
        for name, t in zip(aux_names, aux_types):
            if name not in input_names:
                self.params.get(name, grad_req="null", allow_deferred_init=True, dtype=t)
        self._cached_graph = syms, out
        n = len(_common_prefix(list(self._params.keys())))
        self._reg_params = {k[n:]: v for k, v in self._params.items()}

    def forward(self, x, *args):
        if isinstance(x, NDArray):
            with x.context:
                return self._call_cached_op(x, *args)
        check(isinstance(x, Symbol), "HybridBlock requires the first argument to forward be either Symbol or "
              f"NDArray, but got {type(x)}")
        flat, in_fmt = flatten([x] + list(args), "input")
        check(in_fmt == self._in_format, "Invalid input format")
        ret = self._cached_graph[1](**{k.name: v for k, v in zip(self._cached_graph[0], flat)})
        return regroup(list(ret), self._out_format)

    def _clear_cached_op(self):
        kept = self._cached_graph
        super()._clear_cached_op()
        self._cached_graph = kept

    def cast(self, dtype):
        self._clear_cached_op()
        super().cast(dtype)
        if np.dtype(dtype).name == "float16":  # BatchNorm's statistics and affine stay float32, as MXNet
            names = self._cached_graph[1].get_internals().list_inputs()
            for node in names:
                for stat, mean in (("running_var", "running_mean"), ("moving_var", "moving_mean")):
                    if node.endswith(stat):
                        stem = node[:-len(stat)]
                        sibs = [stem + t for t in (mean, "gamma", "beta")]
                        if all(p in names for p in sibs):
                            for p in [node] + sibs:
                                self.params.get(p).cast("float32")

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError


def _param_types(inputs, out):
    """dtypes of `out`'s arguments and aux states, from the inputs' dtypes (float32 by default)."""
    given = {}
    for s in inputs:
        dt = s.attr("__dtype__")
        given[s.name] = np.float32 if dt is None else _MX_DTYPE.get(int(dt), np.float32)
    try:
        arg_t, _, aux_t = out.infer_type(**given)
    except MXNetError:
        arg_t = aux_t = None
    if arg_t is None:
        return [np.float32] * len(out.list_arguments()), [np.float32] * len(out.list_auxiliary_states())
    return [t if t is not None else np.float32 for t in arg_t], [t if t is not None else np.float32 for t in aux_t]

