"""MXNet's binary NDArray list format: `mx.nd.save`, `mx.nd.load` and `.params` files.

Layout, all little-endian, as MXNet 1.9.1 writes it (`src/ndarray/ndarray.cc`, checked
byte for byte against files from MXNet 1.9.1 in `tests/golden/params/`):

    uint64 0x112 (list magic) | uint64 reserved (0; ignored on read) | uint64 count
    | count x NDArray | uint64 name count (0 or count) | names: uint64 length + UTF-8

    NDArray, V2 (what MXNet 1.9.1 and jbind write):
        uint32 0xF993FAC9 | int32 storage type (0 = dense) | int32 ndim | ndim x int64
        | int32 dev_type, int32 dev_id | int32 dtype flag | raw data in C order

Read as well:
    V3, uint32 0xF993FACA: V2 written under np shape semantics (`mx.np_shape(True)`, which
        `mx.nd.save` follows too): ndim 0 is a scalar, a dim may be 0, dense arrays only.
        As MXNet's, `mx.nd.load` reads V3 only under `np_shape(True)` and the others only
        outside it; the model loaders (Gluon, `mx.model`, Module) take either in any mode.
    V1, uint32 0xF993FAC8: no storage type; int32 ndim + int64 dims, context, flag, data.
    Magic-less (before V1): the first uint32 is ndim, then ndim x uint32 dims, then as V1.
    In V1 and magic-less arrays ndim 0 is a one-element scalar, as MXNet 1.9.1 reads it.

A V2 array with ndim 0 is MXNet's empty ("none") NDArray: nothing follows its shape.
MXNet 1.9.1's `mx.nd.load` fails on it ("unknown storage type: -1"), and so does jbind.
A sparse array (storage type 1 row_sparse, 2 csr) has, after the storage type, its
storage shape (the shape of its values), then shape, context and dtype flag as above,
then per aux array (csr: indptr, indices; row_sparse: indices) a dtype flag and a shape,
then the values, then each aux array's data. dtype flags: 0 float32,
1 float64, 2 float16, 3 uint8, 4 int32, 5 int8, 6 int64, 7 bool, 12 bfloat16.

As in MXNet, arrays load onto cpu(0), or onto gpu(i) when saved from gpu(i) and JAX has
that GPU; the saved context is written as the array's own (cpu(1) is dev_type 1, id 1).

Differences from MXNet: outside np shape semantics a 0-d NDArray is written with shape
(1,) (in V2, ndim 0 would mean an empty NDArray; MXNet has no 0-d arrays there); the
model loaders read either layout in either mode (see above).
float64 and int64 arrays load as such; only under JBIND_X64=0 (JAX's x64 mode off) they
become float32 and int32 NDArrays on load (as `mx.nd.array` does; out-of-range floats become inf); the numpy-level
`load_numpy` / `save_numpy` keep the exact bytes in any mode.
"""
from __future__ import annotations

import math
import os
import struct
from typing import NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ..base import DTYPE_MX_TO_NP, MXNetError
from ..context import Context
from ..io_util import atomic_write_bytes
from ..util import is_np_shape
from ._sparse_base import SparseRecord, check_csr, check_rsp, from_record, record_of
from .ndarray import NDArray

LIST_MAGIC = 0x112
V1_MAGIC = 0xF993FAC8
V2_MAGIC = 0xF993FAC9
V3_MAGIC = 0xF993FACA

FLAG_TO_DTYPE = {**{k: np.dtype(v) for k, v in DTYPE_MX_TO_NP.items()}, 12: np.dtype(jnp.bfloat16)}
DTYPE_TO_FLAG = {v: k for k, v in FLAG_TO_DTYPE.items()}
_STYPES = {1: "row_sparse", 2: "csr"}
_DEV_TYPES = (1, 2, 3, 5)        # cpu, gpu, cpu_pinned, cpu_shared
_MIN_ARRAY_BYTES = 12            # the smallest record: a V2 empty array (magic, stype, ndim 0)
_MAX_NDIM = 32                   # numpy's limit
_MAX_EMPTY_EXTENT = 2 ** 31      # a zero-size array's other dims: beyond this is corruption


class Decoded(NamedTuple):
    arrays: list          # np.ndarray each, exact bytes
    contexts: list        # (dev_type, dev_id) each, as saved
    names: list           # [] or one str per array


def _fail(where: str, msg: str):
    raise MXNetError(f"cannot load NDArray file {where}: {msg}")


class _Reader:
    __slots__ = ("buf", "pos", "where", "np_shape")

    def __init__(self, buf, where: str, np_shape=None):
        self.buf, self.pos, self.where = memoryview(buf).cast("B"), 0, where
        self.np_shape = np_shape  # the mode loading in, whose layout (V3 or not) is required; None: any

    def left(self) -> int:
        return len(self.buf) - self.pos

    def need(self, n: int, what: str):
        if n > self.left():
            _fail(self.where, f"truncated: {what} needs {n} bytes at offset {self.pos}, "
                              f"but only {self.left()} remain")

    def unpack(self, fmt: str, what: str) -> tuple:
        n = struct.calcsize(fmt)
        self.need(n, what)
        vals = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += n
        return vals

    def array(self, dtype: np.dtype, count: int, what: str) -> np.ndarray:
        n = dtype.itemsize * count
        self.need(n, what)
        a = np.frombuffer(self.buf, dtype, count, self.pos) if count else np.empty(0, dtype)
        self.pos += n
        return a


def _read_shape(r: _Reader, magic: int, what: str):
    """(dims, is_none) for one array's shape, in the layout its magic selects."""
    if magic in (V1_MAGIC, V2_MAGIC, V3_MAGIC):
        (ndim,) = r.unpack("<i", f"{what} ndim")
        if magic == V3_MAGIC and ndim == -1:
            return (), True
        if ndim < 0 or ndim > _MAX_NDIM:
            _fail(r.where, f"{what} has ndim {ndim}, outside 0..{_MAX_NDIM}")
        dims = r.array(np.dtype("<i8"), ndim, f"{what} shape ({ndim} dims)").tolist()
        if magic == V3_MAGIC and -1 in dims:
            return tuple(dims), True
        return tuple(dims), magic == V2_MAGIC and ndim == 0
    ndim = magic  # the magic-less layout starts with a uint32 ndim
    if ndim > _MAX_NDIM:
        _fail(r.where, f"{what} has bad magic 0x{magic:08X}: not 0x{V2_MAGIC:08X} (V2), "
                       f"0x{V1_MAGIC:08X} (V1) or 0x{V3_MAGIC:08X} (V3), and too large to be the "
                       f"ndim of MXNet's oldest layout")
    return tuple(r.array(np.dtype("<u4"), ndim, f"{what} legacy shape ({ndim} dims)").tolist()), False


def _read_array(r: _Reader, i: int):
    what = f"array {i}"
    (magic,) = r.unpack("<I", f"{what} magic")
    if r.np_shape is not None and r.np_shape != (magic == V3_MAGIC):
        _fail(r.where, f"{what} was saved in np shape semantics (V3), must be loaded under mx.np_shape(True)"
              if r.np_shape is False else f"{what} was not saved in np shape semantics, but is being loaded "
              "under mx.np_shape(True); load it under np_shape(False)")
    stype = 0
    if magic in (V2_MAGIC, V3_MAGIC):
        (stype,) = r.unpack("<i", f"{what} storage type")
        if stype not in _STYPES and stype != 0:
            _fail(r.where, f"{what} has unknown storage type {stype}")
        if stype and magic == V3_MAGIC:
            _fail(r.where, f"{what} is sparse in np shape semantics (V3), which only holds dense arrays")
    if stype:
        return _read_sparse(r, magic, what, _STYPES[stype])
    dims, is_none = _read_shape(r, magic, what)
    if is_none:
        _fail(r.where, f"{what} is an empty (none) NDArray, shape {dims}; MXNet's mx.nd.load "
                       "cannot return one either")
    if any(d < 0 for d in dims):
        _fail(r.where, f"{what} has a negative dimension in shape {dims}")
    dev_type, dev_id, flag = r.unpack("<iii", f"{what} context and dtype")
    if dev_type not in _DEV_TYPES:
        _fail(r.where, f"{what} has unknown device type {dev_type} (known: {list(_DEV_TYPES)})")
    return _read_data(r, flag, dims, f"{what} data"), (dev_type, dev_id)


def _read_data(r: _Reader, flag: int, dims, what: str) -> np.ndarray:
    dtype = FLAG_TO_DTYPE.get(flag)
    if dtype is None:
        _fail(r.where, f"{what} has unknown dtype flag {flag} (known: "
                       f"{', '.join(f'{k}={v.name}' for k, v in FLAG_TO_DTYPE.items())})")
    if any(d < 0 for d in dims):
        _fail(r.where, f"{what} has a negative dimension in shape {dims}")
    size = math.prod(dims)
    if size == 0 and math.prod(d for d in dims if d) >= _MAX_EMPTY_EXTENT:
        _fail(r.where, f"{what} has implausible zero-size shape {dims}")
    data = r.array(dtype.newbyteorder("<"), size, f"{what}, {dtype.name}{list(dims)}")
    return data.astype(dtype, copy=True).reshape(dims)


def _read_sparse(r: _Reader, magic: int, what: str, stype: str):
    storage, _ = _read_shape(r, magic, f"{what} storage shape")
    dims, is_none = _read_shape(r, magic, what)
    if is_none or any(d < 0 for d in dims):
        _fail(r.where, f"{what} ({stype}) has no valid shape: {dims}")
    dev_type, dev_id, flag = r.unpack("<iii", f"{what} context and dtype")
    if dev_type not in _DEV_TYPES:
        _fail(r.where, f"{what} has unknown device type {dev_type} (known: {list(_DEV_TYPES)})")
    heads = []
    for k in range(2 if stype == "csr" else 1):
        (aux_flag,) = r.unpack("<i", f"{what} aux {k} dtype")
        heads.append((aux_flag, _read_shape(r, magic, f"{what} aux {k} shape")[0]))
    data = _read_data(r, flag, storage, f"{what} ({stype}) values")
    aux = [_read_data(r, f, d, f"{what} aux {k}") for k, (f, d) in enumerate(heads)]
    if any(a.dtype.kind not in "iu" or a.ndim != 1 for a in aux):
        _fail(r.where, f"{what} ({stype}) has index arrays that are not 1-D integers")
    aux = [a.astype(np.int64) for a in aux]  # unsigned indices would hide their order from the checks
    try:
        check_csr(data, aux[0], aux[1], dims) if stype == "csr" else check_rsp(data, aux[0], dims)
    except MXNetError as e:
        _fail(r.where, f"{what} ({stype}): {e}")
    return SparseRecord(stype, data, tuple(aux), tuple(dims)), (dev_type, dev_id)


def decode(buf, where: str = "<buffer>", np_shape=None) -> Decoded:
    """Parse MXNet's NDArray list format; every count and length is checked against `buf`.
    `np_shape` True / False: refuse arrays not in that mode's layout (V3 / V1, V2), as MXNet."""
    r = _Reader(buf, where, np_shape)
    magic, _reserved = r.unpack("<QQ", "the header")
    if magic != LIST_MAGIC:
        _fail(where, f"bad list magic 0x{magic:X}, expected 0x{LIST_MAGIC:X} (not an MXNet NDArray file)")
    (count,) = r.unpack("<Q", "the array count")
    if count * _MIN_ARRAY_BYTES + 8 > r.left():
        _fail(where, f"truncated or corrupt: it declares {count} arrays, which need at least "
                     f"{count * _MIN_ARRAY_BYTES + 8} bytes, but only {r.left()} remain")
    arrays, contexts = [], []
    for i in range(count):
        a, ctx = _read_array(r, i)
        arrays.append(a)
        contexts.append(ctx)
    (n_names,) = r.unpack("<Q", "the name count")
    if n_names not in (0, count):
        _fail(where, f"it has {n_names} names for {count} arrays (must be 0 or {count})")
    names = []
    for i in range(n_names):
        (length,) = r.unpack("<Q", f"name {i} length")
        raw = r.array(np.dtype("u1"), length, f"name {i}").tobytes()
        try:
            names.append(raw.decode("utf-8"))
        except UnicodeDecodeError as e:
            _fail(where, f"name {i} is not valid UTF-8: {e}")
    return Decoded(arrays, contexts, names)


def encode(arrays: Sequence[np.ndarray], names: Sequence[str] = (), contexts=None, np_shape=False) -> bytes:
    """MXNet 1.9.1's bytes (V2) for `arrays`, with `names` ([] or one per array); `np_shape`:
    in the V3 layout (dense only, 0-d arrays as ndim 0), as MXNet saves under np shape semantics."""
    if names and len(names) != len(arrays):
        raise MXNetError(f"encode: {len(names)} names for {len(arrays)} arrays")
    magic = V3_MAGIC if np_shape else V2_MAGIC
    parts = [struct.pack("<QQQ", LIST_MAGIC, 0, len(arrays))]
    for i, a in enumerate(arrays):
        label = repr(names[i]) if names else str(i)
        dev_type, dev_id = contexts[i] if contexts is not None else (1, 0)
        if isinstance(a, SparseRecord):
            if np_shape:
                raise MXNetError(f"cannot save array {label}: a {a.stype} array under np shape semantics "
                                 "(MXNet saves only dense arrays there)")
            stype = {v: k for k, v in _STYPES.items()}[a.stype]
            parts.append(struct.pack(f"<Iii{a.data.ndim}q", V2_MAGIC, stype, a.data.ndim, *a.data.shape))
            parts.append(struct.pack(f"<i{len(a.shape)}qiii", len(a.shape), *a.shape, dev_type, dev_id,
                                     _flag(a.data, label)))
            for x in a.aux:
                parts.append(struct.pack("<iiq", _flag(x, label), 1, len(x)))
            parts.extend(np.ascontiguousarray(x, dtype=x.dtype.newbyteorder("<")).tobytes()
                         for x in (a.data, *a.aux))
            continue
        a = np.asarray(a)
        flag = _flag(a, label)
        shape = a.shape if np_shape else a.shape or (1,)
        parts.append(struct.pack(f"<Iii{len(shape)}qiii", magic, 0, len(shape), *shape,
                                 dev_type, dev_id, flag))
        parts.append(np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<")).tobytes())
    parts.append(struct.pack("<Q", len(names)))
    for n in names:
        b = n.encode("utf-8")
        parts.append(struct.pack("<Q", len(b)) + b)
    return b"".join(parts)


def _flag(a: np.ndarray, label: str) -> int:
    flag = DTYPE_TO_FLAG.get(a.dtype.newbyteorder("="))
    if flag is None:
        raise MXNetError(f"cannot save array {label}: dtype {a.dtype} has no MXNet dtype flag "
                         f"(supported: {', '.join(d.name for d in DTYPE_TO_FLAG)})")
    return flag


def decode_raw(buf, where: str = "<raw bytes>") -> np.ndarray:
    """One array from MXNet's raw-bytes form (`MXNDArraySaveRawBytes`: one NDArray record
    without the list header), which is how MXNet pickles an NDArray."""
    r = _Reader(buf, where)
    a, _ = _read_array(r, 0)
    if r.left():
        _fail(where, f"{r.left()} bytes follow the array")
    return a


def encode_raw(a: np.ndarray) -> bytes:
    """The raw-bytes form of one array, as `MXNDArraySaveRawBytes` writes it (cpu(0))."""
    return encode([a])[24:-8]  # drop the list header and the name count


# --- file level ------------------------------------------------------------------------
def _path(fname, arg: str = "fname") -> str:
    if not isinstance(fname, (str, os.PathLike)):
        raise TypeError(f"{arg} required to be a string")
    return os.fspath(fname)


def _read(fname: str) -> bytes:
    try:
        with open(fname, "rb") as f:
            return f.read()
    except OSError as e:
        raise MXNetError(f"cannot load NDArray file {fname!r}: {e.strerror or e}") from None


def _result(values: list, names: list):
    return dict(zip(names, values)) if names else values


def _split(data, kind, message):
    """(values, names) from MXNet's accepted `data` forms: one array, a list, or a str dict."""
    if isinstance(data, kind):
        return [data], []
    if isinstance(data, dict):
        if any(not isinstance(k, str) for k in data) or any(not isinstance(v, kind) for v in data.values()):
            raise TypeError(message)
        return list(data.values()), list(data.keys())
    if isinstance(data, list):
        if any(not isinstance(v, kind) for v in data):
            raise TypeError(message)
        return list(data), []
    raise ValueError("data needs to either be a NDArray, dict of str, NDArray pairs or a list of NDarrays.")


def save(fname, data) -> None:
    """Save an NDArray, a list of NDArrays or a dict str -> NDArray, as `mx.nd.save`.

    The file is MXNet 1.9.1's format (V2 magic; sparse arrays in MXNet's sparse layout;
    under `mx.np_shape(True)` V3, dense arrays only) and is written atomically: a failed
    save leaves any previous file intact. Outside np_shape a 0-d NDArray is written with
    shape (1,). A float64/int64 array is written as what it holds (float32/int32 only under
    JBIND_X64=0).
    """
    fname = _path(fname)
    values, names = _split(data, NDArray, "save only accept dict str->NDArray or list of NDArray")
    ctxs = [(v.context.device_typeid, v.context.device_id) for v in values]
    _write(fname, encode([v.asnumpy() if v.stype == "default" else record_of(v) for v in values], names, ctxs,
                         is_np_shape()))


def _write(fname: str, blob: bytes) -> None:
    try:
        atomic_write_bytes(fname, blob)
    except OSError as e:
        raise MXNetError(f"cannot save NDArray file {fname!r}: {e.strerror or e}") from e


def _canonical(a: np.ndarray) -> np.ndarray:
    """Narrow 64-bit arrays when JAX's x64 mode is off; out-of-range floats become inf quietly."""
    dt = jax.dtypes.canonicalize_dtype(a.dtype)
    if dt == a.dtype:
        return a
    with np.errstate(all="ignore"):
        return a.astype(dt)


def _to_ndarrays(dec: Decoded):
    devices = {}
    out = []
    for a, (dev_type, dev_id) in zip(dec.arrays, dec.contexts):
        key = dev_id if dev_type == 2 else None
        if key not in devices:
            try:
                devices[key] = Context("gpu", dev_id).jax_device if key is not None else None
            except MXNetError:
                devices[key] = None
            if devices[key] is None:
                devices[key] = Context("cpu", 0).jax_device
        out.append(from_record(a, devices[key], _canonical) if isinstance(a, SparseRecord) else
                   NDArray(jax.device_put(_canonical(a), devices[key])))
    return _result(out, dec.names)


def load(fname, *, any_layout=False):
    """Load NDArrays saved by `mx.nd.save` (MXNet's or jbind's), as `mx.nd.load`.

    Returns a list, or a dict str -> NDArray when the file has names. Arrays go to cpu(0)
    (gpu(i) for arrays saved from gpu(i) when JAX has that GPU). float64/int64 arrays stay
    64-bit (under JBIND_X64=0 they become float32/int32; `load_numpy` keeps them exact). Raises
    `MXNetError` naming the file for a missing, truncated or corrupt file. Sparse arrays
    load as CSRNDArray / RowSparseNDArray. As MXNet's, a file saved under np shape
    semantics (V3) loads only under `mx.np_shape(True)` and others only outside it;
    `any_layout=True` (jbind's model loaders) takes either in any mode.
    """
    fname = _path(fname)
    return _to_ndarrays(decode(_read(fname), repr(fname), None if any_layout else is_np_shape()))


def load_frombuffer(buf):
    """Load NDArrays from the bytes of a saved file, as `mx.nd.load_frombuffer`."""
    if not isinstance(buf, (bytes, bytearray, memoryview)):
        raise TypeError("buf required to be a string or bytes")
    return _to_ndarrays(decode(buf, "<buffer>", is_np_shape()))


def load_numpy(fname):
    """jbind extension: like `load`, but numpy arrays with the file's exact dtype and bytes."""
    fname = _path(fname)
    dec = decode(_read(fname), repr(fname))
    return _result(dec.arrays, dec.names)


def save_numpy(fname, data) -> None:
    """jbind extension: like `save`, for numpy arrays (any shape; 0-d are written as (1,))."""
    fname = _path(fname)
    values, names = _split(data, np.ndarray, "save_numpy only accepts a dict str->ndarray or a list of ndarray")
    _write(fname, encode(values, names))
