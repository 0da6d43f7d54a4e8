"""Persistent compilation across processes, through JAX's compilation cache.

A cache folder that cannot be created or written, that is full, or that holds corrupt
or truncated entries degrades to compiling: one `PersistentCacheWarning` per folder,
never an exception and never a wrong executable. jbind wraps JAX's cache object so that
every entry it writes carries a SHA-256 of its key and its bytes; an entry that fails the
check (corrupt, truncated, without the checksum, or copied from another key's file) is a
miss and is removed, so the fresh compile replaces it. A write that fails removes what it
left half-written; entries are written atomically (temp file, fsync, rename).

The entries are compiled programs, run when loaded: the folder is created `0700`, and one
that another user owns or that its group or others may write is refused (a warning; the
cache stays off). After each write, least recently used entries are removed until the
folder fits in `JBIND_CACHE_MAX_BYTES` (see `_folder`).
"""
from __future__ import annotations

import hashlib
import os
import struct
import threading
import warnings

import jax
from jax.experimental.compilation_cache import compilation_cache as _public

from ..base import JbindWarning
from ..io_util import atomic_write_bytes
from . import _folder


class PersistentCacheWarning(JbindWarning):
    """The persistent compilation cache could not be used as asked; jbind compiles instead."""


_enabled: list = []
_saved: dict = {}
_warned: set = set()
_lock = threading.Lock()
_MAGIC = b"JBC2"
_HEADER = len(_MAGIC) + 32
_SETTINGS = ("jax_compilation_cache_dir", "jax_persistent_cache_min_compile_time_secs",
             "jax_persistent_cache_min_entry_size_bytes")


def enable_persistent_cache(path: str) -> None:
    """Store compiled executables under `path` so a later process loads instead of compiling.

    The folder is created with mode 0700. If it cannot be created, or another user owns it,
    or its group or others may write to it, a `PersistentCacheWarning` says so and nothing
    changes. Its size is bounded by `JBIND_CACHE_MAX_BYTES` (bytes, default 4 GiB; least
    recently used entries are removed first).
    """
    path = os.fspath(path)
    _folder.max_bytes()  # a bad JBIND_CACHE_MAX_BYTES is an error now, not at the first write
    with _lock:
        _warned.discard(path)
    why = _folder.make_private(path)
    if why is not None:
        _warn_once(path, why)
        return
    if not _saved:
        _saved.update({k: getattr(jax.config, k) for k in _SETTINGS})
    _public.reset_cache()  # JAX opens its cache once; a new folder needs a fresh one
    jax.config.update("jax_compilation_cache_dir", path)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    _guard(path)
    _enabled[:] = [path]


def disable_persistent_cache() -> None:
    """Stop reading and writing the persistent cache (JAX's settings as before enabling)."""
    _public.reset_cache()
    for k, v in _saved.items():
        jax.config.update(k, v)
    _saved.clear()
    _enabled.clear()


def persistent_cache_dir():
    return _enabled[0] if _enabled else None


def enable_from_env() -> None:
    path = os.environ.get("JBIND_CACHE_DIR")
    if path:
        enable_persistent_cache(path)


def _warn_once(path: str, what: str) -> None:
    with _lock:
        if path in _warned:
            return
        _warned.add(path)
    warnings.warn(f"persistent compilation cache {path!r}: {what}; compiling instead (this warning is "
                  f"given once per folder)", PersistentCacheWarning, stacklevel=2)


def _guard(path: str) -> None:
    """Open JAX's cache for `path` now and wrap it (private JAX API: skipped if it moved)."""
    try:
        from jax._src import compilation_cache as cc
        cc._initialize_cache()
        if cc._cache is not None and not isinstance(cc._cache, _Guarded):
            cc._cache = _Guarded(cc._cache, path)
    except (ImportError, AttributeError, AssertionError):  # pragma: no cover - another JAX
        pass
    except OSError as e:  # the folder vanished or cannot be listed
        _warn_once(path, f"cannot open it ({type(e).__name__}: {e})")


class _Guarded:
    """JAX's cache object with checksummed entries and every failure a warned miss."""

    def __init__(self, inner, path):
        self._inner, self._dir = inner, path
        self._path = getattr(inner, "_path", path)

    def get(self, key):
        try:
            data = self._inner.get(key)
        except Exception as e:  # an unreadable file or folder: a miss
            _warn_once(self._dir, f"cannot read an entry ({type(e).__name__}: {e})")
            return None
        if data is None:
            return None
        body = data[_HEADER:]
        header_ok = data[:len(_MAGIC)] == _MAGIC and len(data) >= _HEADER
        if header_ok and _checksum(key, body) == data[len(_MAGIC):_HEADER]:
            _folder.touch(self._entry(key))
            return body
        # plain JAX's entries (no checksum) and entries copied from another key's file are misses too
        _warn_once(self._dir, "an entry is corrupt, truncated, without jbind's checksum or filed under "
                              "another key (removed)")
        self._drop(key)
        return None

    def put(self, key, value):
        data = _MAGIC + _checksum(key, value) + value
        try:
            # JAX's local LRUCache (no eviction of its own) would write the file in place: write it here,
            # atomically, under the name it reads
            if getattr(self._inner, "eviction_enabled", None) is False:
                atomic_write_bytes(self._entry(key), data)
            else:
                self._inner.put(key, data)
        except Exception as e:  # read-only, full, gone
            self._drop(key)
            _warn_once(self._dir, f"cannot write an entry ({type(e).__name__}: {e})")
            return
        _folder.evict(self._dir)

    def _entry(self, key):
        return os.path.join(os.fspath(self._path), f"{key}-cache")

    def _drop(self, key):
        try:
            os.unlink(self._entry(key))
        except OSError:
            pass


def _checksum(key, body) -> bytes:
    """SHA-256 over the entry's key (length-prefixed) and its bytes: an entry copied over
    another key's file fails it."""
    k = str(key).encode()
    h = hashlib.sha256(struct.pack("<I", len(k)) + k)
    h.update(body)
    return h.digest()
