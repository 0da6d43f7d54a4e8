"""MXNet 1.x's C++ data iterators `CSVIter` and `MNISTIter` (in io_mnist.py), read with numpy.

Both read their whole input when they are made and then behave as MXNet 1.9.1's: the
same batches, `pad` and `index`, the same `reset`, and the first batch read at
construction (MXNet's `MXDataIter` does that to learn the shapes). Values are parsed as
MXNet parses them: CSV floats with dmlc's own `strtof` (which is not always the nearest
float32), CSV integers as C's `strtoll`, MNIST pixels scaled by 1/256, and MNISTIter's
shuffle is MXNet's (`std::shuffle` over `std::mt19937(seed)` as libstdc++ draws it).

Differences (each a clear `MXNetError` where MXNet reads garbage or stops late): a CSV
field that is not a number, a row of the wrong length or a label file with fewer rows
fails at construction, naming the file and line; MNIST files are checked (magic numbers,
counts, length); a batch larger than MNISTIter's data is an error (MXNet raises
StopIteration from the constructor); `label_shape` (1, k) with k > 1 is refused (MXNet
returns a (batch,) label filled from the wrong rows). And `iter_next()` right after
construction moves on (MXNet's returns True on the first batch forever until `reset()`).
"""
from __future__ import annotations

import ast
import logging
import math
import os
import re

import numpy as np

from .base import MXNetError
from .io import DataBatch, DataDesc, DataIter
from .ndarray import NDArray
from .ndarray import array as nd_array

_LOG = logging.getLogger(__name__)


def _nd(a: np.ndarray) -> NDArray:
    # on the default context; int64 becomes int32 without JAX's x64 mode, as everywhere in jbind
    return nd_array(a, dtype=a.dtype)


class MXDataIter(DataIter):
    """What MXNet's C++ iterators look like from Python (`mx.io.MXDataIter`).

    The first batch is read at construction, to learn `provide_data` and `provide_label`;
    `next()` hands it out first unless `reset()` came before. Subclasses implement
    `_advance()` (-> bool, fills `self._batch` with (data, label, pad, index)) and
    `_before_first()`.
    """

    def __init__(self, data_name: str = "data", label_name: str = "softmax_label"):
        super().__init__()
        self._batch = None
        self.first_batch = None
        self.first_batch = self.next()
        data, label = self._batch[0], self._batch[1]
        self.provide_data = [DataDesc(data_name, data.shape, data.dtype.type)]
        self.provide_label = [DataDesc(label_name, label.shape, label.dtype.type)]
        self.batch_size = data.shape[0]

    def _advance(self) -> bool:
        raise NotImplementedError

    def _before_first(self) -> None:
        raise NotImplementedError

    def reset(self):
        self.first_batch = None
        self._before_first()

    def next(self) -> DataBatch:
        if self.first_batch is not None:
            batch, self.first_batch = self.first_batch, None
            return batch
        if self._advance():
            return DataBatch(data=[self.getdata()], label=[self.getlabel()], pad=self.getpad(),
                             index=self.getindex())
        raise StopIteration

    def iter_next(self) -> bool:
        if self.first_batch is not None:
            # MXNet returns True here without moving on, so `while it.iter_next()` loops
            # forever on the first batch until reset(); here the first batch is consumed.
            self.first_batch = None
            return True
        return self._advance()

    def getdata(self) -> NDArray:
        return _nd(self._batch[0])

    def getlabel(self) -> NDArray:
        return _nd(self._batch[1])

    def getindex(self):
        return self._batch[3].copy()

    def getpad(self) -> int:
        return self._batch[2]


# --- parameters as MXNet parses them (values may come as strings, as in MXNet) --------

def _shape(name, v) -> tuple:
    if isinstance(v, str):
        try:
            v = ast.literal_eval(v.strip())
        except (ValueError, SyntaxError) as e:
            raise MXNetError(f"invalid {name} {v!r}: expected a shape such as (3, 2)") from e
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        v = (v,)
    try:
        shape = tuple(int(d) for d in v)
    except (TypeError, ValueError) as e:
        raise MXNetError(f"invalid {name} {v!r}: expected a shape such as (3, 2)") from e
    if not shape or min(shape) < 1:
        raise MXNetError(f"invalid {name} {shape}: every dimension must be at least 1")
    return shape


def _bool(name, v) -> bool:
    if isinstance(v, str):
        if v.strip().lower() in ("true", "1"):
            return True
        if v.strip().lower() in ("false", "0"):
            return False
        raise MXNetError(f"invalid {name} {v!r}: expected a boolean")
    return bool(v)


def _dtype_name(dtype) -> str:
    try:
        return np.dtype(dtype).name
    except TypeError:
        return str(dtype)


def _int(name, v, low=None) -> int:
    try:
        i = int(v)
    except (TypeError, ValueError) as e:
        raise MXNetError(f"invalid {name} {v!r}: expected an integer") from e
    if low is not None and i < low:
        raise MXNetError(f"value {i} for parameter {name} should be greater equal to {low}")
    return i


# --- CSV values, parsed as MXNet's dmlc parser does ------------------------------------

_F32 = np.float32
_FLT_MAX_SIG, _FLT_MIN_SIG = _F32(3.402823466), _F32(1.175494351)
_FLOAT = re.compile(rb"([+-]?)(?:(inf(?:inity)?)|(nan(?:\([0-9a-z_]*\))?)|(\d*)(?:\.(\d*))?(?:e([+-]?)(\d+))?f?)",
                    re.IGNORECASE)
_INT = re.compile(rb"([+-]?)(?:0x([0-9a-f]+)|(\d+)(?:\.\d*)?(?:e[+-]?\d+)?)", re.IGNORECASE)
_INT64_MIN, _INT64_MAX = -(2 ** 63), 2 ** 63 - 1


def _dmlc_scales():
    # 10**e as dmlc builds it: float32 products of 1e8f first, then of 10.0f
    out = []
    for e in range(39):
        scale = _F32(1.0)
        for _ in range(e // 8):
            scale = _F32(scale * _F32(1e8))
        for _ in range(e % 8):
            scale = _F32(scale * _F32(10.0))
        out.append(scale)
    return out


_SCALE = _dmlc_scales()


def _dmlc_strtof(field: bytes):
    """dmlc::strtof's float32 for one field (None if it is not a number).

    Digits before the point are a uint64 (wrapping), at most 19 after it are added as
    float(double(frac) / 10**k), the exponent is clipped to 38 and applied by float32
    multiplications: so not always the float32 nearest to the decimal. Call it under
    np.errstate(over="ignore", under="ignore").
    """
    m = _FLOAT.fullmatch(field.strip(b" \t\r\n\f"))
    if m is None:
        return None
    sign, inf, nan, ip, fp, esign, ed = m.groups()
    if nan is not None:
        return _F32(np.nan)
    if inf is not None:
        v = _F32(np.inf)
    else:
        if not ip and not fp:
            return None
        # 10**64 and 10**32 are multiples of 2**64 and 2**32: the wrapped values depend only on
        # the last digits, so a 5,000-digit field needs no 5,000-digit int (Python refuses those)
        v = _F32(np.uint64(int(ip[-64:] or b"0") % 2 ** 64))
        if fp:
            d = fp[:19]
            v = _F32(v + _F32(float(int(d)) / float(10 ** len(d))))
        if ed is not None:
            frac = esign == b"-"
            e = min(int(ed[-32:]) % 2 ** 32, 38)
            if e == 38 and ((not frac and v > _FLT_MAX_SIG) or (frac and v < _FLT_MIN_SIG)):
                v = _FLT_MIN_SIG if frac else _FLT_MAX_SIG
            v = _F32(v / _SCALE[e]) if frac else _F32(v * _SCALE[e])
    return -v if sign == b"-" else v


def _strtoll(field: bytes):
    """C's strtoll(field, 0) (hex, octal, clamped to int64) for one field (None if not a number)."""
    m = _INT.fullmatch(field.strip(b" \t\r\n\f\v"))
    if m is None:
        return None
    sign, hexd, dec = m.groups()
    if hexd is not None:
        v = int(hexd, 16)
    elif dec.startswith(b"0"):
        octal = re.match(rb"[0-7]*", dec).group()
        v = int(octal, 8) if octal else 0
    else:
        v = int(dec) if len(dec) <= 20 else _INT64_MAX + 1  # clamped below, as strtoll clamps
    v = -v if sign == b"-" else v
    return min(max(v, _INT64_MIN), _INT64_MAX)


_CSV_DTYPES = {"float32": np.float32, "int32": np.int32, "int64": np.int64}


def _csv_files(uri: str, what: str) -> list:
    """The files a data_csv / label_csv names: a file, or a folder's files in name order."""
    if os.path.isdir(uri):
        files = sorted(os.path.join(uri, n) for n in os.listdir(uri) if os.path.isfile(os.path.join(uri, n)))
        files = [f for f in files if os.path.getsize(f) > 0]
        if not files:
            raise MXNetError(f"CSVIter: {what} {uri!r} is a folder without any non-empty file")
        return files
    if not os.path.exists(uri):
        raise MXNetError(f"CSVIter: {what} {uri!r}: no such file or directory")
    return [uri]


def _read_csv(uri: str, shape: tuple, dtype, what: str) -> np.ndarray:
    """All rows of `uri` as an array (rows, *shape), or a clear error naming file and line."""
    size = math.prod(shape)
    parse = _dmlc_strtof if dtype == np.float32 else _strtoll
    rows, where = [], []
    for path in _csv_files(uri, what):
        try:
            with open(path, "rb") as f:
                text = f.read()
        except OSError as e:
            raise MXNetError(f"CSVIter: cannot read {what} {path!r}: {e.strerror or e}") from e
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line:
                continue  # blank lines are skipped, as MXNet's parser does
            fields = line.split(b",")
            if len(fields) > 1 and fields[-1] == b"":
                fields.pop()  # a trailing comma
            if len(fields) != size:
                raise MXNetError(f"CSVIter: {what} {path!r} line {lineno} has {len(fields)} values, "
                                 f"but its shape {shape} needs {size}")
            rows.append(fields)
            where.append((path, lineno))
    if not rows:
        raise MXNetError(f"CSVIter: {what} {uri!r} has no rows")
    cache = {}
    flat = []
    with np.errstate(over="ignore", under="ignore"):
        for (path, lineno), fields in zip(where, rows):
            for col, field in enumerate(fields, 1):
                v = cache.get(field)
                if v is None:
                    v = parse(field)
                    if v is None:
                        kind = "a number" if dtype == np.float32 else "an integer"
                        raise MXNetError(f"CSVIter: {what} {path!r} line {lineno}, column {col}: "
                                         f"{field.decode('latin-1')!r} is not {kind}")
                    cache[field] = v
                flat.append(v)
    if dtype == np.float32:
        out = np.array(flat, np.float32)
    else:  # strtoll's int64, then C's cast to the narrower type (wrapping)
        out = np.array(flat, np.int64).astype(dtype)
    return out.reshape((len(rows),) + shape)


class CSVIter(MXDataIter):
    """Batches of rows from a CSV file (MXNet's `mx.io.CSVIter`; keyword arguments only).

    Args:
        data_csv: the CSV file, or a folder whose files are read in name order.
        data_shape: the shape of one row's values.
        label_csv: the labels' CSV file; None or 'NULL': every label is 0 (shape (batch,)).
        label_shape: the shape of one row of label_csv; (1,) gives labels of shape (batch,).
        batch_size: rows per batch.
        round_batch: fill the last batch from the start of the data (`pad` counts those
            rows) and begin the next epoch where it stopped, as MXNet does (a `reset()`
            right after such a batch does not go back to the first row). False: the
            last batch keeps the previous batch's rows in the unfilled slots.
        dtype: 'float32' (default), 'int32' or 'int64'.
        data_name, label_name: the names in provide_data / provide_label.
        **kwargs: MXNet's other parameters (prefetch_buffer, ctx) and unknown ones are
            accepted and ignored, as MXNet does.
    """

    def __init__(self, *, data_csv=None, data_shape=None, label_csv=None, label_shape=(1,), batch_size=None,
                 round_batch=True, dtype=None, data_name="data", label_name="softmax_label", **kwargs):
        for key, v in (("data_csv", data_csv), ("data_shape", data_shape), ("batch_size", batch_size)):
            if v is None:
                raise MXNetError(f"CSVIter: required parameter {key} is missing")
        dt = "float32" if dtype is None or dtype == "None" else _dtype_name(dtype)
        if dt not in _CSV_DTYPES:
            raise MXNetError(f"{dt} is not supported for CSVIter (float32, int32 or int64)")
        self.dtype = np.dtype(_CSV_DTYPES[dt])
        self.data_csv = os.fspath(data_csv)
        self.round_batch = _bool("round_batch", round_batch)
        bs = _int("batch_size", batch_size, low=1)
        data = _read_csv(self.data_csv, _shape("data_shape", data_shape), self.dtype.type, "data_csv")
        n = data.shape[0]
        if label_csv is None or label_csv == "NULL":
            label = np.zeros((n,), self.dtype)
        else:
            lshape = _shape("label_shape", label_shape)
            if lshape[0] == 1 and math.prod(lshape) > 1:
                raise MXNetError(f"CSVIter: label_shape {lshape} is not supported: MXNet gives such labels "
                                 f"the shape (batch,) and fills them from the wrong rows; use "
                                 f"{lshape[1:]} instead")
            label = _read_csv(os.fspath(label_csv), lshape, self.dtype.type, "label_csv")
            if label.shape[0] < n:
                raise MXNetError(f"CSVIter: label_csv {os.fspath(label_csv)!r} has {label.shape[0]} rows, "
                                 f"fewer than the {n} of data_csv {self.data_csv!r}")
            label = label[:n]
            if math.prod(lshape) == 1:
                label = label.reshape(n)
        self._data, self._label, self._index = data, label, np.arange(n, dtype=np.uint64)
        self._n, self._bs = n, bs
        # MXNet's batch loader fills one buffer in place: slots it does not fill keep old rows
        self._buf = (np.zeros((bs,) + data.shape[1:], data.dtype), np.zeros((bs,) + label.shape[1:], label.dtype),
                     np.zeros(bs, np.uint64))
        self._cursor = 0
        self._overflow = 0
        super().__init__(data_name, label_name)

    def _fill(self, top, start, k):
        for buf, src in zip(self._buf, (self._data, self._label, self._index)):
            buf[top:top + k] = src[start:start + k]

    def _advance(self) -> bool:
        if self._overflow:  # the epoch ended with a wrapped batch: nothing until reset()
            return False
        bs, n = self._bs, self._n
        top = min(bs, n - self._cursor)
        if top <= 0:
            return False
        self._fill(0, self._cursor, top)
        self._cursor += top
        pad = 0
        if top < bs:
            if self.round_batch:
                need = bs - top
                if need > n:
                    raise MXNetError(f"CSVIter: round_batch needs {need} rows from the start of "
                                     f"{self.data_csv!r} to fill a batch of {bs}, but it has only {n}")
                self._fill(top, 0, need)
                self._cursor = self._overflow = pad = need
            else:
                pad = bs - top
        self._batch = tuple(b.copy() for b in self._buf[:2]) + (pad, self._buf[2].copy())
        return True

    def _before_first(self) -> None:
        if self.round_batch and self._overflow:
            self._overflow = 0  # go on from the rows after the wrap, as MXNet
        else:
            self._cursor = 0
