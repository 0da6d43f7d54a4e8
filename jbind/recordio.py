"""`mx.recordio`: MXNet's RecordIO files (.rec) and their indexes (.idx), byte for byte.

A .rec file (dmlc-core's RecordIO, little-endian) is a sequence of parts:

    uint32 magic 0xced7230a | uint32 lrec = cflag << 29 | length | payload | zeros to 4 bytes

A record is written as one part (cflag 0) unless its payload holds the magic number at an
offset that is a multiple of 4: there the payload is cut, that magic dropped, and the
pieces written as parts with cflag 1 (first), 2 (middle) and 3 (last); the reader puts
the magic back between them. So a reader that finds a magic number at a part boundary
knows a record starts there. A record is shorter than 2**29 bytes.

An .idx file is text, one `key<TAB>offset` line per record written with `write_idx`.
A writer writes the .rec under a temp name beside it and, at `close()`, syncs it and
renames it over the old one; then it writes the whole .idx atomically (the old .idx is
removed just before the rename). MXNet truncates both files at open and writes as records
go. So until `close()` the files on disk are the old ones, whole; a crash between the
rename and the index leaves a new .rec without an .idx (an error naming it), never the
new data behind an old index.

Differences from MXNet: bad input raises `MXNetError` naming the file, the offset and what
was wrong (MXNet: "Invalid RecordIO File", AssertionError for a read on a writer);
missing files raise `RecordIOFileNotFound`, both an MXNetError and a FileNotFoundError;
pickling a reader leaves the original open (MXNet closes it); an open writer cannot be
pickled (MXNet's copy would reopen, and so truncate, the file).
"""
from __future__ import annotations

import numbers
import os
import struct
from collections import namedtuple

import numpy as np

from .base import MXNetError
from .io_util import AtomicFile, atomic_write_text

MAGIC = 0xCED7230A
_MAGIC_BYTES = struct.pack("<I", MAGIC)
_LEN_MASK = (1 << 29) - 1
MAX_RECORD = 1 << 29


class RecordIOFileNotFound(MXNetError, FileNotFoundError):
    """A .rec or .idx file that is not there (MXNet raises MXNetError for one, FileNotFoundError for the other)."""


def _encode(buf: bytes) -> bytes:
    """The parts of one record, as dmlc's RecordIOWriter::WriteRecord writes them."""
    n = len(buf)
    words = np.frombuffer(buf, "<u4", n // 4)
    cuts = (np.flatnonzero(words == MAGIC) * 4).tolist()
    out = []
    start = 0
    for cut in cuts:
        out += [_MAGIC_BYTES, struct.pack("<I", (1 if start == 0 else 2) << 29 | (cut - start)), buf[start:cut]]
        start = cut + 4
    out += [_MAGIC_BYTES, struct.pack("<I", (3 if start else 0) << 29 | (n - start)), buf[start:],
            b"\0" * (-n % 4)]
    return b"".join(out)


class MXRecordIO:
    """Reads or writes a RecordIO file sequentially (MXNet's `mx.recordio.MXRecordIO`).

    Args:
        uri: path of the .rec file.
        flag: 'w' to write (the old file stands until close()) or 'r' to read.
    """

    def __init__(self, uri, flag: str):
        self.uri = os.fspath(uri)
        self.flag = flag
        self.pid = None
        self.is_open = False
        self.writable = flag == "w"
        self._f = None
        self.open()

    def open(self) -> None:
        """Open the file (again: a reader starts at the first record, a writer truncates)."""
        if self.flag not in ("w", "r"):
            raise ValueError("Invalid flag %s" % self.flag)
        self.writable = self.flag == "w"
        try:
            self._atomic = AtomicFile(self.uri) if self.writable else None
            self._f = self._atomic.file if self.writable else open(self.uri, "rb")
        except FileNotFoundError as e:
            raise RecordIOFileNotFound(f"{type(self).__name__}: {self.uri!r}: no such file") from e
        except OSError as e:
            raise MXNetError(f"{type(self).__name__}: cannot open {self.uri!r}: {e.strerror or e}") from e
        self.pid = os.getpid()
        self.is_open = True

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - nothing to report to during interpreter teardown
            pass

    def __getstate__(self):
        if self.is_open and self.writable:
            raise MXNetError(f"cannot pickle {type(self).__name__} {self.uri!r} open for writing "
                             f"(its copy would truncate the file)")
        d = dict(self.__dict__)
        d["_f"] = None
        return d

    def __setstate__(self, d):
        self.__dict__ = d
        was_open = d["is_open"]
        self.is_open = False
        if was_open:
            self.open()

    def _check_pid(self, allow_reset: bool = False) -> None:
        if not self.is_open:
            raise MXNetError(f"{type(self).__name__} {self.uri!r} is closed")
        if self.pid != os.getpid():  # a forked child shares the parent's file offset
            if allow_reset:
                self.reset()
            else:
                raise MXNetError(f"{type(self).__name__} {self.uri!r} was opened in process {self.pid}; "
                                 f"using it in process {os.getpid()} is forbidden (reset() it there first)")

    def close(self) -> None:
        """Close the file; a writer's data is flushed and synced."""
        if not self.is_open:
            return
        f, self._f = self._f, None
        self.is_open = False
        self.pid = None
        if self.writable:
            self._commit()
        else:
            f.close()

    def _commit(self) -> None:
        """The written file takes the .rec's name (synced, renamed: until now the old one stood)."""
        atomic, self._atomic = self._atomic, None
        try:
            atomic.commit()
        except OSError as e:
            raise MXNetError(f"{type(self).__name__}: cannot write {self.uri!r}: {e.strerror or e}") from e

    def reset(self) -> None:
        """Back to the first record (a writer: what it wrote so far is saved, and it starts over)."""
        self.close()
        self.open()

    def write(self, buf: bytes) -> None:
        """Append one record."""
        if not self.writable:
            raise MXNetError(f"{type(self).__name__} {self.uri!r} is open for reading (flag 'r'); "
                             f"write() needs flag 'w'")
        self._check_pid(allow_reset=False)
        if not isinstance(buf, (bytes, bytearray, memoryview)):
            raise TypeError(f"a record is bytes, got {type(buf).__name__}")
        buf = bytes(buf)
        if len(buf) >= MAX_RECORD:
            raise MXNetError(f"RecordIO records are shorter than 2**29 bytes; this one is {len(buf)}")
        self._f.write(_encode(buf))

    def read(self):
        """The next record as bytes, or None at the end of the file."""
        if self.writable:
            raise MXNetError(f"{type(self).__name__} {self.uri!r} is open for writing (flag 'w'); "
                             f"read() needs flag 'r'")
        self._check_pid(allow_reset=False)
        f = self._f
        out = []
        start = f.tell()
        while True:
            at = f.tell()
            head = f.read(8)
            if not head and not out:
                return None
            if len(head) < 8:
                what = "a record's continuation is missing" if out else f"a part header is cut after {len(head)} bytes"
                raise MXNetError(f"{self.uri!r} is truncated at offset {at}: {what} (record at offset {start})")
            magic, lrec = struct.unpack("<II", head)
            if magic != MAGIC:
                raise MXNetError(f"{self.uri!r} is not a RecordIO file or is damaged: offset {at} holds "
                                 f"0x{magic:08x}, not the magic number 0x{MAGIC:08x}")
            cflag, length = lrec >> 29, lrec & _LEN_MASK
            if (cflag in (2, 3)) != bool(out) or cflag > 3:
                raise MXNetError(f"{self.uri!r} is damaged: the part at offset {at} has continuation flag "
                                 f"{cflag}, " + ("expected 2 or 3" if out else "expected 0 or 1 at a record's start"))
            padded = (length + 3) & ~3
            data = f.read(padded)
            if len(data) < padded:
                raise MXNetError(f"{self.uri!r} is truncated: the part at offset {at} holds {length} bytes, "
                                 f"the file ends {len(data)} bytes into it")
            if out:
                out.append(_MAGIC_BYTES)
            out.append(data[:length])
            if cflag in (0, 3):
                return b"".join(out)


class MXIndexedRecordIO(MXRecordIO):
    """A RecordIO file with an index, for random access (MXNet's `mx.recordio.MXIndexedRecordIO`).

    Args:
        idx_path: path of the .idx file (written whole at `close()`).
        uri: path of the .rec file.
        flag: 'w' or 'r'.
        key_type: the type of the keys (int, str, ...), applied to keys read from the index.
    """

    def __init__(self, idx_path, uri, flag: str, key_type=int):
        self.idx_path = os.fspath(idx_path)
        self.idx = {}
        self.keys = []
        self.key_type = key_type
        self._lines = []
        super().__init__(uri, flag)

    def open(self) -> None:
        super().open()
        self.idx = {}
        self.keys = []
        self._lines = []
        if self.writable:
            return
        try:
            self._read_index()
        except BaseException:
            super().close()  # the .rec is not left open behind a refused index
            raise

    def _read_index(self) -> None:
        try:
            with open(self.idx_path, "rb") as f:
                text = f.read().decode("utf-8")
        except FileNotFoundError as e:
            raise RecordIOFileNotFound(f"MXIndexedRecordIO: index {self.idx_path!r}: no such file") from e
        except OSError as e:
            raise MXNetError(f"MXIndexedRecordIO: cannot read index {self.idx_path!r}: {e.strerror or e}") from e
        except UnicodeDecodeError as e:
            raise MXNetError(f"MXIndexedRecordIO: index {self.idx_path!r} is not UTF-8 text "
                             f"(byte {e.start}): not a RecordIO index") from None
        lines = text.split("\n")
        if lines[-1] == "":
            lines.pop()  # the last line's newline
        for lineno, line in enumerate(lines, 1):
            parts = line.strip().split("\t")
            try:
                key = self.key_type(parts[0])
                pos = int(parts[1])
            except (IndexError, ValueError, TypeError) as e:
                raise MXNetError(f"MXIndexedRecordIO: index {self.idx_path!r} line {lineno} is {_clip(line)}, "
                                 f"not '<key>\\t<offset>' with a {getattr(self.key_type, '__name__', '')} key") from e
            self.idx[key] = pos
            self.keys.append(key)
        size = os.fstat(self._f.fileno()).st_size
        bad = next((k for k in self.keys if not 0 <= self.idx[k] < size), None)
        if bad is not None:  # checked here, not at a seek (OSError, ValueError) or a read (None)
            raise MXNetError(f"MXIndexedRecordIO: index {self.idx_path!r}: the offset {self.idx[bad]} of key "
                             f"{_clip(bad)} is outside {self.uri!r} ({size} bytes)")

    def close(self) -> None:
        """Close the .rec; a writer then writes the whole .idx atomically."""
        if not self.is_open:
            return
        if self.writable:  # no moment with the new .rec beside the old .idx: the old one goes first
            try:
                os.unlink(self.idx_path)
            except FileNotFoundError:
                pass
            except OSError as e:
                raise MXNetError(f"MXIndexedRecordIO: cannot replace index {self.idx_path!r}: "
                                 f"{e.strerror or e}") from e
        super().close()
        if self.writable:
            self._write_index("".join(self._lines))

    def _write_index(self, text: str) -> None:
        try:
            atomic_write_text(self.idx_path, text)
        except OSError as e:
            super().close()
            raise MXNetError(f"MXIndexedRecordIO: cannot write index {self.idx_path!r}: {e.strerror or e}") from e

    def __getstate__(self):
        d = super().__getstate__()
        d["_lines"] = []
        return d

    def seek(self, idx) -> None:
        """Put the reader at the record of key `idx` (KeyError if it has none)."""
        if self.writable:
            raise MXNetError(f"MXIndexedRecordIO {self.uri!r} is open for writing; seek() needs flag 'r'")
        self._check_pid(allow_reset=True)
        self._f.seek(self.idx[idx])

    def tell(self) -> int:
        """The writer's position: the offset the next record starts at."""
        if not self.writable:
            raise MXNetError(f"MXIndexedRecordIO {self.uri!r} is open for reading; tell() needs flag 'w'")
        self._check_pid(allow_reset=False)
        return self._f.tell()

    def read_idx(self, idx):
        """The record of key `idx`."""
        self.seek(idx)
        rec = self.read()
        if rec is None:  # the file shrank since the index was read
            raise MXNetError(f"MXIndexedRecordIO: key {_clip(idx)} is at offset {self.idx[idx]}, past the end "
                             f"of {self.uri!r}")
        return rec

    def write_idx(self, idx, buf) -> None:
        """Append a record under key `idx` (converted with key_type)."""
        key = self.key_type(idx)
        pos = self.tell()
        self.write(buf)
        self._lines.append("%s\t%d\n" % (str(key), pos))
        self.idx[key] = pos
        self.keys.append(key)


def _clip(v) -> str:
    r = repr(v)
    return r if len(r) <= 80 else r[:77] + "..."


IRHeader = namedtuple("HEADER", ["flag", "label", "id", "id2"])
IRHeader.__doc__ = """The header `pack` puts before a record (MXNet's `mx.recordio.IRHeader`).

Fields:
    flag: 0 for a scalar label; for an array label, its length (set by `pack`).
    label: a number, or an array of float32 (stored after the header).
    id: usually a unique id of the record.
    id2: the id's higher bits, usually 0.
"""
_IR_FORMAT = "<IfQQ"
_IR_SIZE = struct.calcsize(_IR_FORMAT)


def pack(header, s: bytes) -> bytes:
    """Prefix `s` with `header` (an IRHeader or a 4-tuple); an array label follows the header as float32."""
    header = IRHeader(*header)
    if isinstance(header.label, numbers.Number):
        header = header._replace(flag=0)
    else:
        label = np.asarray(header.label, dtype=np.float32)
        header = header._replace(flag=label.size, label=0)
        s = label.tobytes() + s
    return struct.pack(_IR_FORMAT, *header) + s


def unpack(s: bytes):
    """-> (IRHeader, the rest of `s`): a scalar label is a float, an array label a float32 array."""
    if len(s) < _IR_SIZE:
        raise MXNetError(f"unpack: a record of {len(s)} bytes is shorter than the {_IR_SIZE}-byte IRHeader")
    header = IRHeader(*struct.unpack(_IR_FORMAT, s[:_IR_SIZE]))
    s = s[_IR_SIZE:]
    if header.flag > 0:
        if len(s) < 4 * header.flag:
            raise MXNetError(f"unpack: the header's flag says {header.flag} float32 labels, "
                             f"but only {len(s)} bytes follow it")
        header = header._replace(label=np.frombuffer(s, np.float32, header.flag))
        s = s[header.flag * 4:]
    return header, s


def _cv2():
    try:
        import cv2  # noqa: PLC0415 - optional; Pillow (jbind.image's codec) serves when it is absent
    except ImportError:
        return None
    return cv2


def unpack_img(s: bytes, iscolor: int = -1):
    """-> (IRHeader, the image decoded as cv2.imdecode(..., iscolor) does: BGR order, HxW for gray).

    Uses OpenCV when installed, else Pillow (`jbind.image`)."""
    header, s = unpack(s)
    cv2 = _cv2()
    if cv2 is not None:
        return header, cv2.imdecode(np.frombuffer(s, dtype=np.uint8), iscolor)
    from .image import _codec  # noqa: PLC0415 - the image package loads on first use
    img = _codec.decode(s, 1 if iscolor > 0 else (0 if iscolor == 0 else -1), to_rgb=False)
    return header, img[..., 0] if img.shape[2] == 1 else img


def pack_img(header, img, quality: int = 95, img_fmt: str = ".jpg") -> bytes:
    """`pack` of `img` (BGR order, as OpenCV's) encoded as '.jpg' (JPEG `quality`) or '.png'
    (compression level `quality`), by OpenCV when installed, else by Pillow."""
    cv2 = _cv2()
    if cv2 is None:
        from .image import _codec  # noqa: PLC0415
        return pack(header, _codec.encode(np.asarray(img), img_fmt, quality, bgr=True))
    encode_params = None
    if img_fmt.upper() in (".JPG", ".JPEG"):
        encode_params = [cv2.IMWRITE_JPEG_QUALITY, quality]
    elif img_fmt.upper() == ".PNG":
        encode_params = [cv2.IMWRITE_PNG_COMPRESSION, quality]
    ret, buf = cv2.imencode(img_fmt, img, encode_params)
    if not ret:
        raise MXNetError(f"pack_img: OpenCV failed to encode the image as {img_fmt}")
    return pack(header, buf.tobytes())
