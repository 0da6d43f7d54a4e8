"""Optimizer-state files (`.states`) that MXNet 1.9.1 and jbind both read.

MXNet's `Module.save_optimizer_states` writes `pickle.dumps(updater.states)`: a dict
index -> state, each NDArray pickled as `mxnet.ndarray.ndarray.NDArray` with the state
`{"handle": <the array's raw bytes>}` (one NDArray record of the `.params` format).
jbind writes its NDArrays under that same name and reads MXNet's, so a `.states` file
moves between the two either way. Other MXNet objects (the optimizer itself, pickled
with `dump_optimizer=True`) cannot be read without MXNet and raise `MXNetError`.
"""
from __future__ import annotations

import io
import pickle

import jax

from ..base import MXNetError
from ..ndarray import NDArray
from ..ndarray.serialize import _canonical, decode_raw, encode_raw

_MX_NDARRAY = ("mxnet.ndarray.ndarray", "NDArray")


class _MXNetNDArray:
    """What a pickled `mxnet.ndarray.NDArray` unpickles to here, before it becomes an NDArray."""

    __slots__ = ("array",)

    def __init__(self, *_):
        self.array = None

    def __setstate__(self, state):
        raw = state.get("handle") if isinstance(state, dict) else None
        self.array = None if raw is None else decode_raw(bytes(raw), "a pickled MXNet NDArray")


class _Unpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) == _MX_NDARRAY or (module.startswith("mxnet.") and name == "NDArray"):
            return _MXNetNDArray
        if module == "mxnet" or module.startswith("mxnet."):
            raise MXNetError(f"the optimizer states hold an MXNet object ({module}.{name}); jbind reads "
                             "MXNet's states saved without the optimizer (`dump_optimizer=False`, what "
                             "`Module.save_optimizer_states` writes)")
        return super().find_class(module, name)


class _Pickler(pickle._Pickler):  # the Python pickler: it lets save_global name a module we lack
    def reducer_override(self, obj):
        if isinstance(obj, NDArray):
            return _MXNetNDArray, (None,), {"handle": bytearray(encode_raw(obj.asnumpy()))}
        return NotImplemented

    def save_global(self, obj, name=None):
        if obj is _MXNetNDArray:
            self.write(pickle.GLOBAL + ("%s\n%s\n" % _MX_NDARRAY).encode("ascii"))
            self.memoize(obj)
            return
        super().save_global(obj, name)


def _restore(x):
    if isinstance(x, _MXNetNDArray):
        return None if x.array is None else NDArray(jax.device_put(_canonical(x.array)))
    if isinstance(x, tuple):
        return tuple(_restore(v) for v in x)
    if isinstance(x, list):
        return [_restore(v) for v in x]
    if isinstance(x, dict):
        return {k: _restore(v) for k, v in x.items()}
    return x


def dumps(obj) -> bytes:
    """Pickle `obj` with its NDArrays in MXNet's form (MXNet's `pickle.loads` reads them)."""
    buf = io.BytesIO()
    _Pickler(buf, protocol=4).dump(obj)
    return buf.getvalue()


def loads(blob: bytes):
    """Unpickle states written by `dumps` or by MXNet; NDArrays load onto cpu(0)."""
    try:
        return _restore(_Unpickler(io.BytesIO(blob)).load())
    except MXNetError:
        raise
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, ImportError,
            IndexError, KeyError) as e:
        raise MXNetError(f"cannot read optimizer states: {type(e).__name__}: {e}") from None


def load_file(updater, fname: str) -> None:
    """Read the `.states` file `fname` into `updater` (`set_states`); errors name the file."""
    try:
        with open(fname, "rb") as f:
            data = f.read()
    except OSError as e:
        raise MXNetError(f"cannot read optimizer states {fname!r}: {e}") from None
    try:
        updater.set_states(data)
    except MXNetError as e:
        raise MXNetError(f"{fname!r}: {e}") from None
