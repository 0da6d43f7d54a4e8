"""MXNet's operator sub-namespaces: `mx.sym.contrib.ctc_loss` is the op `_contrib_ctc_loss`,
`mx.nd.linalg.gemm2` is `_linalg_gemm2`, and so on for each prefix below; `_internal`
holds every `_*` operator under its own name."""
from __future__ import annotations

import sys
import types

PREFIXES = {"contrib": "_contrib_", "linalg": "_linalg_", "random": "_random_", "image": "_image_"}


def install(package: str, functions: dict, extra: dict | None = None, make=None) -> dict:
    """One module per prefix, `<package>.<name>`, holding the functions whose op name has
    the prefix (without it), then `extra[name]`'s functions over them (MXNet's Python
    samplers in `random`); registered in sys.modules so `from <package> import contrib`
    works too. `make(op_name, short_name)`, if given, makes each module function instead
    of reusing `functions[op_name]` (mx.sym's name their nodes after the short name, as
    MXNet's do: `mx.sym.linalg.gemm2` makes `gemm20`). Returns {name: module} to put in the
    package's namespace."""
    out = {}
    for name, prefix in PREFIXES.items():
        module = types.ModuleType(f"{package}.{name}", f"MXNet's `{prefix}*` operators, without the prefix.")
        for op_name, fn in functions.items():
            if op_name.startswith(prefix):
                short = op_name[len(prefix):]
                setattr(module, short, make(op_name, short) if make else fn)
        for fn_name, fn in (extra or {}).get(name, {}).items():
            setattr(module, fn_name, fn)
        sys.modules[module.__name__] = out[name] = module
    # MXNet's `_internal`: the operators whose names start with "_", under their full names
    # (`mx.sym._internal._identity_with_attr_like_rhs`, `mx.nd._internal._plus_scalar`).
    internal = types.ModuleType(f"{package}._internal", "MXNet's operators named `_*`, under their own names.")
    for op_name, fn in functions.items():
        if op_name.startswith("_"):
            setattr(internal, op_name, fn)
    sys.modules[internal.__name__] = out["_internal"] = internal
    return out
