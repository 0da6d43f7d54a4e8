"""MXNet's operator sub-namespaces: `mx.sym.contrib.ctc_loss` is the op `_contrib_ctc_loss`,
`mx.nd.linalg.gemm2` is `_linalg_gemm2`, and so on for each prefix below."""
from __future__ import annotations

import sys
import types

PREFIXES = {"contrib": "_contrib_", "linalg": "_linalg_", "random": "_random_", "image": "_image_"}


def install(package: str, functions: dict, extra: dict | None = None) -> dict:
    """One module per prefix, `<package>.<name>`, holding the functions whose op name has
    the prefix (without it), then `extra[name]`'s functions over them (MXNet's Python
    samplers in `random`); registered in sys.modules so `from <package> import contrib`
    works too. Returns {name: module} to put in the package's namespace."""
    out = {}
    for name, prefix in PREFIXES.items():
        module = types.ModuleType(f"{package}.{name}", f"MXNet's `{prefix}*` operators, without the prefix.")
        for op_name, fn in functions.items():
            if op_name.startswith(prefix):
                setattr(module, op_name[len(prefix):], fn)
        for fn_name, fn in (extra or {}).get(name, {}).items():
            setattr(module, fn_name, fn)
        sys.modules[module.__name__] = out[name] = module
    return out
