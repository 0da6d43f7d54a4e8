"""Persistent compilation cache faults (jbind/compile/persistent.py): a folder that cannot
be created, is read-only or full, or holds corrupt or truncated entries degrades to
compiling with exactly one PersistentCacheWarning, correct results and no crash.

The cache is enabled in this process and disabled again after each test; each test
compiles a graph of its own size so that nothing comes from jbind's in-memory cache.
Faults are made in both layers of the folder: JAX's cache entries (`*-cache`) and jbind's
executable store, both written with io_util's atomic writer (through tempfile.mkstemp),
and Path.write_bytes, which JAX itself writes with, for good measure.
"""
import errno
import hashlib
import os
import pathlib
import struct
import tempfile

import numpy as np
import pytest

import jbind as mx
from jbind.compile import PersistentCacheWarning


@pytest.fixture
def folder(tmp_path):
    """These tests are about JAX's cache layer: jbind's own executable store (tested in
    test_executable_store.py) is off, or it would answer before JAX's entries are read."""
    from jbind.compile import store
    old = store.set_enabled(False)
    path = tmp_path / "cache"
    yield path
    store.set_enabled(old)
    mx.compile.disable_persistent_cache()
    if path.exists():
        path.chmod(0o700)


def _forward(hidden, batch=2):
    data = mx.sym.Variable("data")
    exe = mx.sym.FullyConnected(data, num_hidden=hidden, name="fc").simple_bind(mx.cpu(), grad_req="null",
                                                                               data=(batch, 5))
    exe.arg_dict["fc_weight"][:] = 0.5
    exe.arg_dict["fc_bias"][:] = 0.25
    exe.arg_dict["data"][:] = 1.0
    out = exe.forward()[0].asnumpy()
    np.testing.assert_array_equal(out, np.full((batch, hidden), 2.75, np.float32))
    return out


def _entries(path):
    return sorted(p for p in pathlib.Path(path).iterdir() if p.name.endswith("-cache"))


def _fail_writes(monkeypatch, path, code, partial=False):
    """Writes under `path` raise OSError(code), JAX's after writing half the bytes if `partial`.
    JAX writes through `jax._src.path.Path`: pathlib's, or etils' epath where that is installed."""
    from jax._src import path as jax_path
    mkstemp = tempfile.mkstemp

    def failing(write):
        def fake_write(self, data):
            if str(self).startswith(str(path)):
                if partial:
                    write(self, data[:len(data) // 2])
                raise OSError(code, os.strerror(code), str(self))
            return write(self, data)
        return fake_write

    def fake_mkstemp(*args, dir=None, **kw):
        if dir is not None and str(dir).startswith(str(path)):
            raise OSError(code, os.strerror(code), str(dir))
        return mkstemp(*args, dir=dir, **kw)
    for cls in {pathlib.Path, jax_path.Path}:
        monkeypatch.setattr(cls, "write_bytes", failing(cls.write_bytes))
    monkeypatch.setattr(tempfile, "mkstemp", fake_mkstemp)


def _checksummed(f) -> bool:
    """jbind's header: magic, then SHA-256 over the length-prefixed key (the file's name) and the body."""
    data, key = f.read_bytes(), f.name[:-len("-cache")].encode()
    return data[:4] == b"JBC2" and hashlib.sha256(struct.pack("<I", len(key)) + key + data[36:]).digest() == data[4:36]


def _ours(record):
    others = [str(w.message) for w in record if not issubclass(w.category, PersistentCacheWarning)]
    assert not others, others
    return [str(w.message) for w in record]


def test_read_only_folder_compiles_with_one_warning(folder, monkeypatch):
    """Read-only by chmod 0o500; as root, where permissions are not enforced, by making
    every write under the folder fail with EROFS."""
    folder.mkdir()
    if os.geteuid() == 0:
        _fail_writes(monkeypatch, folder, errno.EROFS)
    else:
        folder.chmod(0o500)
    with pytest.warns(PersistentCacheWarning, match="cannot write") as record:
        mx.compile.enable_persistent_cache(folder)
        _forward(17)
        _forward(17, batch=3)
    assert len(_ours(record)) == 1
    assert os.listdir(folder) == []


def test_full_disk_compiles_with_one_warning_and_leaves_no_partial_entry(folder, monkeypatch):
    """ENOSPC half way through each write (JAX's cache writes with Path.write_bytes)."""
    mx.compile.enable_persistent_cache(folder)
    _fail_writes(monkeypatch, folder, errno.ENOSPC, partial=True)
    with pytest.warns(PersistentCacheWarning, match="No space left") as record:
        _forward(19)
        _forward(19, batch=3)
    assert len(_ours(record)) == 1
    assert os.listdir(folder) == [], "a half-written entry would be read as corrupt later"
    monkeypatch.undo()
    _forward(19, batch=4)  # space again: written, no warning
    assert _entries(folder) and all(_checksummed(f) for f in _entries(folder))


def test_folder_that_cannot_be_created_warns_and_compiles(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.warns(PersistentCacheWarning, match="cannot create") as record:
        mx.compile.enable_persistent_cache(blocker / "cache")
    assert len(_ours(record)) == 1 and mx.compile.persistent_cache_dir() is None
    _forward(21)


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_corrupt_entries_are_misses_with_one_warning_and_are_replaced(folder, damage):
    hidden = 23 if damage == "truncate" else 24
    mx.compile.enable_persistent_cache(folder)
    _forward(hidden)
    _forward(hidden, batch=3)
    files = sorted(folder.iterdir())
    assert len(_entries(folder)) >= 2
    for f in files:
        data = bytearray(f.read_bytes())
        if damage == "truncate":
            data = data[:7]
        else:
            data[len(data) // 2] ^= 0xFF
        f.write_bytes(bytes(data))
    mx.compile.clear()
    with pytest.warns(PersistentCacheWarning, match="corrupt") as record:
        _forward(hidden)
        _forward(hidden, batch=3)
    assert len(_ours(record)) == 1
    ours = [f for f in _entries(folder) if f.name.startswith("jit_jbind_forward")]
    assert len(ours) == 2 and all(_checksummed(f) for f in ours), "removed and written again"
    mx.compile.clear()
    _forward(hidden)  # the rewritten entries load cleanly: no warning (warnings are errors)
