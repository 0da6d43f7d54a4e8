"""`ParameterDict`: Gluon's name -> Parameter table, with a prefix and a shared parent."""
from __future__ import annotations

import re
from collections import OrderedDict

import numpy as np

from .. import initializer
from .. import ndarray as nd
from ..base import np_dtype
from ._util import GluonValueError, brief_print_list, check, indent
from .parameter import Constant, Parameter

__all__ = ["ParameterDict"]


class ParameterDict:
    """MXNet's `ParameterDict`: parameters by full name; `get` makes missing ones.

    Args:
        prefix: prepended to the names given to `get` / `get_constant`.
        shared: another ParameterDict whose parameters `get` reuses before making new ones.
    """

    def __init__(self, prefix="", shared=None):
        self._prefix = prefix
        self._params = OrderedDict()
        self._shared = shared

    def __repr__(self):
        name = self._prefix + " " if self._prefix else ""
        content = "\n".join(indent(f"  {v}", 2) for v in self.values())
        return f"{name}(\n{content}\n)"

    def __getitem__(self, key):
        return self._params[key]

    def __iter__(self):
        return iter(self._params)

    def __len__(self):
        return len(self._params)

    def __contains__(self, key):
        return key in self._params

    def items(self):
        return self._params.items()

    def keys(self):
        return self._params.keys()

    def values(self):
        return self._params.values()

    @property
    def prefix(self) -> str:
        return self._prefix

    def _get_impl(self, name):
        if name in self._params:
            return self._params[name]
        if self._shared is not None and name in self._shared._params:
            self._params[name] = self._shared._params[name]
            return self._params[name]
        return None

    def get(self, name, **kwargs) -> Parameter:
        """The Parameter `prefix + name`, made with `kwargs` if absent. For an existing one,
        each given attribute must match (a shape's 0 entries match anything and are filled)."""
        name = self.prefix + name
        param = self._get_impl(name)
        if param is None:
            param = self._params[name] = Parameter(name, **kwargs)
            return param
        for k, v in kwargs.items():
            existing = getattr(param, k, None)
            if existing is None:
                setattr(param, k, v)
                continue
            if k == "shape":
                v = (v,) if isinstance(v, int) else tuple(v)
                if len(v) == len(existing):
                    if all(a == b or a <= 0 or b <= 0 for a, b in zip(v, existing)):
                        param._shape = tuple(b if a <= 0 else a for a, b in zip(v, existing))
                        continue
            elif k == "dtype" and np_dtype(v) == np_dtype(existing):
                continue
            check(v is None or v == existing, f"Cannot retrieve Parameter '{name}' because desired attribute does "
                  f"not match with stored for attribute '{k}': desired '{v!s}' vs stored '{existing!s}'.")
        return param

    def get_constant(self, name, value=None) -> Constant:
        """The Constant `prefix + name`, made from `value` if absent."""
        name = self.prefix + name
        param = self._get_impl(name)
        if param is None:
            if value is None:
                raise KeyError(f"No constant named '{name}'. Please specify value if you want to create a new "
                               "constant.")
            param = self._params[name] = Constant(name, value)
        elif value is not None:
            check(isinstance(param, Constant), f"Parameter '{name}' already exists but it is not a constant.")
            value = value.asnumpy() if isinstance(value, nd.NDArray) else np.asarray(value)
            check(param.shape == value.shape and (param.value.asnumpy() == value).all(),
                  f"Constant '{name}' already exists but it's value doesn't match new value")
        return param

    def update(self, other) -> None:
        """Add `other`'s parameters; a name held by a different Parameter is an error."""
        for k, v in other.items():
            if k in self._params:
                check(self._params[k] is v, "Cannot update self with other because they have different "
                      f"Parameters with the same name '{k}'")
        for k, v in other.items():
            self._params[k] = v

    def initialize(self, init=None, ctx=None, verbose=False, force_reinit=False) -> None:
        """Initialize every parameter, `init` (default Uniform) serving those without their own."""
        if init is None:
            init = initializer.Uniform()
        if verbose:
            init.set_verbosity(verbose=verbose)
        for v in self.values():
            v.initialize(None, ctx, init, force_reinit=force_reinit)

    def zero_grad(self) -> None:
        for p in self.values():
            p.zero_grad()

    def reset_ctx(self, ctx) -> None:
        for p in self.values():
            p.reset_ctx(ctx)

    def list_ctx(self) -> list:
        """Every context some parameter lives on."""
        seen = []
        for p in self.values():
            for c in p.list_ctx():
                if c not in seen:
                    seen.append(c)
        return seen

    def setattr(self, name, value) -> None:
        """Set attribute `name` (e.g. 'grad_req', 'lr_mult') of every parameter."""
        for p in self.values():
            setattr(p, name, value)

    def select(self, select: str) -> "ParameterDict":
        """The parameters whose names match the regular expression `select` (jbind extension)."""
        pattern = re.compile(select)
        ret = ParameterDict(self._prefix)
        ret.update({k: v for k, v in self.items() if pattern.match(k)})
        return ret

    def save(self, filename, strip_prefix="") -> None:
        """Write the parameters to `filename` in MXNet's .params format, names without `strip_prefix`."""
        arg_dict = {}
        for param in self.values():
            if not param.name.startswith(strip_prefix):
                raise GluonValueError(
                    f"Prefix '{strip_prefix}' is to be striped before saving, but Parameter's name '{param.name}' "
                    f"does not start with '{strip_prefix}'. this may be due to your Block shares parameters from "
                    "other Blocks or you forgot to use 'with name_scope()' when creating child blocks.")
            arg_dict[param.name[len(strip_prefix):]] = param._reduce()
        nd.save(filename, arg_dict)

    def load(self, filename, ctx=None, allow_missing=False, ignore_extra=False, restore_prefix="",
             cast_dtype=False, dtype_source="current") -> None:
        """Read `filename` (MXNet's .params format); its names get `restore_prefix` prepended."""
        if restore_prefix:
            for name in self.keys():
                check(name.startswith(restore_prefix), f"restore_prefix is '{restore_prefix}' but Parameters name "
                      f"'{name}' does not start with '{restore_prefix}'")
        self.load_dict(nd.load(filename, any_layout=True), ctx, allow_missing, ignore_extra, restore_prefix, filename,
                       cast_dtype, dtype_source)

    def load_dict(self, param_dict, ctx=None, allow_missing=False, ignore_extra=False, restore_prefix="",
                  filename=None, cast_dtype=False, dtype_source="current") -> None:
        """Load from a name -> NDArray dict (Module's 'arg:' / 'aux:' prefixes are dropped)."""
        lprefix = len(restore_prefix)
        if isinstance(param_dict, dict):
            loaded = [(k[4:] if k.startswith(("arg:", "aux:")) else k, v) for k, v in param_dict.items()]
        else:
            loaded = list(param_dict)
        arg_dict = {restore_prefix + k: v for k, v in loaded}
        where = f"file '{filename}'" if filename else "param_dict"
        if not allow_missing:
            for name in self.keys():
                check(name in arg_dict, f"Parameter '{name[lprefix:]}' is missing in {where}, which contains "
                      f"parameters: {brief_print_list(arg_dict.keys())}. Please make sure source and target "
                      "networks have the same prefix.")
        for name, value in arg_dict.items():
            if name not in self._params:
                check(ignore_extra, f"Parameter '{name[lprefix:]}' loaded from {where} is not present in "
                      f"ParameterDict, choices are: {brief_print_list(self._params.keys())}. Set ignore_extra "
                      "to True to ignore. Please make sure source and target networks have the same prefix.")
                continue
            self[name]._load_init(value, ctx, cast_dtype=cast_dtype, dtype_source=dtype_source)
