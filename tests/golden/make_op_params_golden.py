"""Write `op_params.json`: the parameter names MXNet 1.9.1 declares for every operator.

    /work/mxvenv/bin/python tests/golden/make_op_params_golden.py

Inputs (NDArray-or-Symbol arguments) are left out; every registered operator is listed,
sorted, so regenerating rewrites the file byte for byte.
"""
import ctypes
import json
import os

import mxnet as mx
from mxnet.base import _LIB, c_str, check_call, mx_uint, py_str


def declared_params(name: str) -> list:
    h = ctypes.c_void_p()
    check_call(_LIB.NNGetOpHandle(c_str(name), ctypes.byref(h)))
    real, desc, key_var, ret = (ctypes.c_char_p() for _ in range(4))
    n = mx_uint()
    names, types, descs = (ctypes.POINTER(ctypes.c_char_p)() for _ in range(3))
    check_call(_LIB.MXSymbolGetAtomicSymbolInfo(h, ctypes.byref(real), ctypes.byref(desc), ctypes.byref(n),
                                                ctypes.byref(names), ctypes.byref(types), ctypes.byref(descs),
                                                ctypes.byref(key_var), ctypes.byref(ret)))
    return [py_str(names[i]) for i in range(n.value) if not py_str(types[i]).startswith("NDArray")
            and "Symbol" not in py_str(types[i])]


def main():
    size = ctypes.c_uint()
    plist = ctypes.POINTER(ctypes.c_char_p)()
    check_call(_LIB.MXListAllOpNames(ctypes.byref(size), ctypes.byref(plist)))
    ops = sorted(py_str(plist[i]) for i in range(size.value))
    out = {name: declared_params(name) for name in ops}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "op_params.json")
    with open(path + ".tmp", "w") as f:
        json.dump(out, f, indent=0, sort_keys=True)
        f.write("\n")
    os.replace(path + ".tmp", path)
    print(f"{len(out)} operators (MXNet {mx.__version__}) -> {path}")


if __name__ == "__main__":
    main()
