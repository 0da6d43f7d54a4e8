"""Optimizer-state files (`.states`) that MXNet 1.9.1 and jbind both read.

MXNet's `Module.save_optimizer_states` writes `pickle.dumps(updater.states)`: a dict
index -> state, each NDArray pickled as `mxnet.ndarray.ndarray.NDArray` with the state
`{"handle": <the array's raw bytes>}` (one NDArray record of the `.params` format).
jbind writes its NDArrays under that same name and reads MXNet's, so a `.states` file
moves between the two either way. Other MXNet objects (the optimizer itself, pickled
with `dump_optimizer=True`) cannot be read without MXNet and raise `MXNetError`.

A `.states` file is data: it is read by an unpickler that resolves only a fixed list of
globals (the NDArray record, `bytearray` and a few other builtin containers,
`collections.OrderedDict`, `copyreg._reconstructor` for plain objects, and jbind's own
`Optimizer` / `LRScheduler` classes or optimizers registered with `mx.optimizer.register`).
It never imports a module, and it sets state only on objects it built itself. Any other
global is an `MXNetError` naming it; nothing in the file runs.
"""
from __future__ import annotations

import collections
import copyreg
import io
import pickle
import sys

import jax
import numpy as np

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
        if raw is not None and not isinstance(raw, (bytes, bytearray)):
            raise MXNetError(f"a pickled MXNet NDArray holds a {type(raw).__name__} where its bytes should be")
        self.array = None if raw is None else decode_raw(bytes(raw), "a pickled MXNet NDArray")


def _bytearray(*args):
    """`bytearray` as pickles call it: from bytes, or from a latin-1 string (protocols 0-2);
    never from a count, which would allocate what the file asks."""
    if args == ():
        return bytearray()
    if len(args) == 1 and isinstance(args[0], (bytes, bytearray)):
        return bytearray(args[0])
    if len(args) == 2 and isinstance(args[0], str) and args[1] in ("latin-1", "latin1"):
        return bytearray(args[0], "latin-1")
    raise MXNetError("builtins.bytearray is called with arguments no pickled bytearray has")


def _bytes(*args):
    if args == ():
        return b""
    if len(args) == 1 and isinstance(args[0], (bytes, bytearray, list, tuple)) and len(args[0]) <= (1 << 30):
        return bytes(args[0])
    raise MXNetError("builtins.bytes is called with arguments no pickled bytes object has")


def _encode(text, encoding="utf-8"):  # `_codecs.encode`: how protocols 0-2 pickle bytes
    if isinstance(text, str) and encoding in ("latin1", "latin-1"):
        return text.encode("latin-1")
    raise MXNetError("_codecs.encode is called with arguments no pickled bytes object has")


def _collection(kind):
    def make(items=()):
        if not isinstance(items, (list, tuple, set, frozenset)):
            raise MXNetError(f"builtins.{kind.__name__} is called on a {type(items).__name__}")
        return kind(items)
    return make


def _optimizer_classes():
    from ..lr_scheduler import LRScheduler
    from ._base import Optimizer
    return Optimizer, LRScheduler


def _reconstructor(cls, base, state):
    """`copyreg._reconstructor` (protocols 0-1) for the plain objects a states file may hold."""
    if base is not object or state is not None or not (isinstance(cls, type)
                                                       and issubclass(cls, _optimizer_classes())):
        raise MXNetError("copyreg._reconstructor is called on something other than a jbind optimizer or "
                         "learning-rate scheduler")
    return copyreg._reconstructor(cls, object, None)


_ALLOWED = {
    ("builtins", "bytearray"): _bytearray,
    ("builtins", "bytes"): _bytes,
    ("builtins", "set"): _collection(set),
    ("builtins", "frozenset"): _collection(frozenset),
    ("builtins", "object"): object,
    ("_codecs", "encode"): _encode,
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("copyreg", "_reconstructor"): _reconstructor,
}
_PY2_NAMES = {"__builtin__": "builtins", "copy_reg": "copyreg"}


def _jbind_class(module: str, name: str):
    """The jbind Optimizer / LRScheduler subclass `module.name`, or a registered optimizer,
    or None. Only modules already imported are looked in: nothing is imported."""
    optimizer, scheduler = _optimizer_classes()
    registered = optimizer.opt_registry.get(name.lower())
    if isinstance(registered, type) and registered.__module__ == module and registered.__qualname__ == name:
        return registered
    mod = sys.modules.get(module) if module.split(".")[0] == "jbind" else None
    cls = vars(mod).get(name) if mod is not None else None
    if isinstance(cls, type) and issubclass(cls, (optimizer, scheduler)) and cls.__module__ == module:
        return cls
    return None


class _Unpickler(pickle._Unpickler):  # the Python unpickler: BUILD can be checked (below)
    dispatch = dict(pickle._Unpickler.dispatch)

    def find_class(self, module, name):
        if (module, name) == _MX_NDARRAY or (module.startswith("mxnet.") and name == "NDArray"):
            return _MXNetNDArray
        if module == "mxnet" or module.startswith("mxnet."):
            raise MXNetError(f"the optimizer states hold an MXNet object ({module}.{name}); jbind reads "
                             "MXNet's states saved without the optimizer (`dump_optimizer=False`, what "
                             "`Module.save_optimizer_states` writes)")
        found = _ALLOWED.get((_PY2_NAMES.get(module, module), name))
        if found is None:
            found = _jbind_class(module, name)
        if found is None:
            raise MXNetError(f"the optimizer states name the global {module}.{name}, which jbind does not "
                             "load: a .states file may hold arrays, numbers, containers and jbind's "
                             "optimizers and learning-rate schedulers, never code")
        return found

    def persistent_load(self, pid):
        raise MXNetError("the optimizer states hold a persistent id, which no .states file has")

    def load_build(self):
        """BUILD only on objects of the allowed classes made by this load, and only with a dict
        of attributes that leaves their methods alone (never on a class or a function)."""
        state, inst = self.stack[-1], self.stack[-2]
        if not isinstance(inst, (_MXNetNDArray,) + _optimizer_classes()) or isinstance(inst, type):
            raise MXNetError(f"the optimizer states set attributes on a {type(inst).__name__}, which jbind "
                             "does not allow")
        if not isinstance(inst, _MXNetNDArray):
            if not isinstance(state, dict) or not all(isinstance(k, str) for k in state):
                raise MXNetError(f"the optimizer states give a {type(inst).__name__} a state that is not a "
                                 "dict of attributes")
            for k in state:
                if k.startswith("__") or callable(getattr(type(inst), k, None)):
                    raise MXNetError(f"the optimizer states replace {type(inst).__name__}.{k}, which jbind "
                                     "does not allow")
        pickle._Unpickler.load_build(self)

    dispatch[pickle.BUILD[0]] = load_build


class _Pickler(pickle._Pickler):  # the Python pickler: it lets save_global name a module we lack
    def save(self, obj, save_persistent_id=True):
        if isinstance(obj, np.generic) and obj.dtype.kind in "biuf":  # a hyperparameter: a Python number,
            obj = obj.item()                                          # which names no global
        super().save(obj, save_persistent_id)

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
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise MXNetError(f"optimizer states must be bytes, got {type(blob).__name__}")
    try:
        return _restore(_Unpickler(io.BytesIO(blob)).load())
    except MXNetError:
        raise
    except Exception as e:  # whatever a malformed file makes the unpickler raise  # noqa: BLE001
        raise MXNetError(f"cannot read optimizer states: {type(e).__name__}: {e}") from None


def unpack(loaded):
    """`(states, optimizer or None)` from what `loads` returned, checked: the states are a dict
    index -> state (None, NDArrays, numbers, or tuples / lists of them), the optimizer, if any,
    a jbind `Optimizer` whose scheduler is an `LRScheduler` or None."""
    optimizer_cls, scheduler_cls = _optimizer_classes()
    optimizer = None
    if isinstance(loaded, tuple) and len(loaded) == 2:
        loaded, optimizer = loaded
        if not isinstance(optimizer, optimizer_cls):
            raise MXNetError(f"the optimizer states are a (states, optimizer) pair whose second item is a "
                             f"{type(optimizer).__name__}, not an Optimizer")
        sched = getattr(optimizer, "lr_scheduler", None)
        if sched is not None and not isinstance(sched, scheduler_cls):
            raise MXNetError(f"the saved optimizer's lr_scheduler is a {type(sched).__name__}, not an LRScheduler")
    if not isinstance(loaded, dict):
        raise MXNetError(f"the optimizer states are a {type(loaded).__name__}, not a dict index -> state")
    todo = []
    for k, v in loaded.items():
        if not isinstance(k, (int, str)) or isinstance(k, bool):
            raise MXNetError(f"the optimizer states have a key of type {type(k).__name__} (an index or a name)")
        todo.append((k, v))
    while todo:
        k, v = todo.pop()
        if isinstance(v, (tuple, list)):
            todo.extend((k, x) for x in v)
        elif not (v is None or isinstance(v, (NDArray, int, float))):
            raise MXNetError(f"the optimizer state of {k!r} holds a {type(v).__name__} (states are NDArrays, "
                             "numbers, None, or tuples of them)")
    return loaded, optimizer


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
