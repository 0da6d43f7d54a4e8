"""The bytes a DataLoader worker process sends back: samples as arrays, never pickles.

A sample is a tree of tuples / lists whose leaves are NDArrays, numpy arrays, numpy or
Python scalars, strings, bytes or None. `encode` writes a JSON description of the tree
(leaf kind, dtype, shape, byte range) followed by the raw array bytes; `decode` rebuilds
it with `np.frombuffer`, refusing object and structured dtypes, so what a worker sends
can never make the parent run code.
"""
from __future__ import annotations

import json
import struct

import numpy as np

from ...base import MXNetError
from ...ndarray.ndarray import NDArray

_HEAD = struct.Struct("<Q")
_MAX_DEPTH = 32


def encode(obj) -> bytes:
    """`obj` (a tree of samples) as bytes for `decode`."""
    blobs = []
    offset = [0]

    def leaf(kind, arr):
        arr = np.asarray(arr)
        arr = arr if arr.flags.c_contiguous else arr.copy(order="C")  # (ascontiguousarray makes 0-d 1-d)
        if arr.dtype.kind in "OV":
            raise MXNetError(f"DataLoader worker: a sample holds a numpy array of dtype {arr.dtype}; only "
                             "numeric, boolean and string arrays cross to the main process")
        raw = arr.tobytes()
        blobs.append(raw)
        spec = {"k": kind, "d": arr.dtype.str, "s": list(arr.shape), "o": offset[0], "n": len(raw)}
        offset[0] += len(raw)
        return spec

    def walk(x, depth):
        if depth > _MAX_DEPTH:
            raise MXNetError("DataLoader worker: a sample is nested more than 32 levels deep")
        if isinstance(x, (tuple, list)):
            return {"k": "tuple" if isinstance(x, tuple) else "list", "c": [walk(v, depth + 1) for v in x]}
        if x is None:
            return {"k": "none"}
        if isinstance(x, NDArray):
            return leaf("nd", x.asnumpy())
        if isinstance(x, np.ndarray):
            return leaf("np", x)
        if isinstance(x, np.generic):
            return leaf("npscalar", np.asarray(x))
        if isinstance(x, bool):
            return {"k": "bool", "v": x}
        if isinstance(x, int):
            return {"k": "int", "v": str(x)}
        if isinstance(x, float):
            return {"k": "float", "v": repr(x)}
        if isinstance(x, str):
            return {"k": "str", "v": x}
        if isinstance(x, bytes):
            return leaf("bytes", np.frombuffer(x, np.uint8))
        raise MXNetError(f"DataLoader worker: a sample holds a {type(x).__name__}; worker processes send back "
                         "NDArrays, numpy arrays, scalars, strings, bytes and tuples / lists of them (use "
                         "thread_pool=True or num_workers=0 for other objects)")

    head = json.dumps(walk(obj, 0)).encode("utf-8")
    return _HEAD.pack(len(head)) + head + b"".join(blobs)


def decode(buf: bytes, to_nd):
    """The tree `encode` wrote; `to_nd(numpy array)` makes the NDArray leaves. A malformed
    message is an MXNetError."""
    try:
        return _decode(buf, to_nd)
    except MXNetError:
        raise
    except (ValueError, TypeError, KeyError, RecursionError, UnicodeDecodeError) as e:
        raise MXNetError(f"DataLoader: a worker message is malformed ({type(e).__name__}: {e})") from e


def _decode(buf, to_nd):
    if len(buf) < _HEAD.size:
        raise MXNetError("DataLoader: a worker message is truncated")
    (n,) = _HEAD.unpack_from(buf)
    if n > len(buf) - _HEAD.size:
        raise MXNetError("DataLoader: a worker message's header is longer than the message")
    tree = json.loads(buf[_HEAD.size:_HEAD.size + n].decode("utf-8"))
    body = memoryview(buf)[_HEAD.size + n:]

    def array(spec):
        dtype = np.dtype(spec["d"])
        if dtype.kind in "OV" or dtype.hasobject:
            raise MXNetError(f"DataLoader: a worker sent an array of dtype {dtype}, which is refused")
        start, count = int(spec["o"]), int(spec["n"])
        if start < 0 or count < 0 or start + count > len(body):
            raise MXNetError("DataLoader: a worker message's array lies outside the message")
        shape = tuple(int(d) for d in spec["s"])
        return np.frombuffer(body[start:start + count], dtype).reshape(shape).copy()

    def walk(spec, depth):
        if depth > _MAX_DEPTH:
            raise MXNetError("DataLoader: a worker message is nested too deep")
        kind = spec["k"]
        if kind in ("tuple", "list"):
            items = [walk(c, depth + 1) for c in spec["c"]]
            return tuple(items) if kind == "tuple" else items
        if kind == "none":
            return None
        if kind == "bool":
            return bool(spec["v"])
        if kind == "int":
            return int(spec["v"])
        if kind == "float":
            return float(spec["v"])
        if kind == "str":
            return str(spec["v"])
        if kind == "nd":
            return to_nd(array(spec))
        if kind == "np":
            return array(spec)
        if kind == "npscalar":
            return array(spec)[()]
        if kind == "bytes":
            return array(spec).tobytes()
        raise MXNetError(f"DataLoader: a worker message has an unknown kind of value {kind!r}")

    return walk(tree, 0)
