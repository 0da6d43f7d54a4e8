"""Compiled executables on disk, filed under jbind's own structural key.

JAX's persistent cache is keyed by the lowered program, so a restarted process still
traces and lowers every graph (a third of a second for a bucketing LM) before it can
look anything up. With a persistent cache folder set, jbind also stores each executable
it compiles, serialized, under a hash of its `CacheKey` (graph fingerprint, shapes,
dtypes, grad_req, mode, devices) and of everything else the program depends on (the
jbind sources, the JAX and jaxlib versions, XLA flags, x64 mode, the devices): a
restarted process finds the executable before tracing anything.

Entries (format in `_entry`) carry a SHA-256 over their key and bytes; a corrupt,
truncated or unreadable entry, or one filed under another key, is a miss (removed, then
rewritten by the fresh compile), and a folder that cannot be written gives one
`PersistentCacheWarning`, as the rest of the persistent cache does. Reading an entry
resolves only a fixed list of JAX data types: nothing in it names code to run. A hit
refreshes the entry's time, and each write evicts least recently used entries beyond
`JBIND_CACHE_MAX_BYTES`.
"""
from __future__ import annotations

import functools
import hashlib
import os
import threading

import jax

from ..io_util import atomic_write_bytes
from . import _entry, _folder, persistent

counts = {"loaded": 0, "saved": 0, "rejected": 0}  # this process's store traffic (tests, reports)
_local = threading.local()
_listening: list = []
_enabled = [True]


def set_enabled(flag: bool) -> bool:
    """Use the executable store with the persistent cache (default) or only JAX's cache;
    returns the previous setting."""
    old, _enabled[0] = _enabled[0], bool(flag)
    return old


def build(key, make):
    """The executable for `key`: loaded from the folder, or made by `make()` and stored.

    Only executables this process compiled are stored: one that JAX itself loaded from
    its own cache serializes without its kernels' object code (XLA:CPU), so it is
    left to JAX's cache. Nor is one whose lowering called `unstorable()`.
    """
    _local.storable = True
    if not _enabled[0] or jax.process_count() > 1:  # programs spanning workers: JAX's cache
        return _surfacing(make())
    compiled = load(key)
    if compiled is not None:
        return compiled
    folder = persistent.persistent_cache_dir()
    _local.tag = _digest(key)[:16] if folder is not None else None
    if folder is not None:
        _forget_jax_entries(folder, _local.tag)
    _listen()
    _local.jax_cache_hit = False
    _local.storable = True
    try:
        compiled = make()
    finally:
        _local.tag = None
    if not _local.jax_cache_hit and _local.storable:
        save(key, compiled)
    return _surfacing(compiled)


def _surfacing(compiled):
    """`compiled`, or where it calls back into Python (not storable), a wrapper through which
    an error the callback raised comes out as itself rather than as XLA's runtime error."""
    return compiled if _local.storable else _HostCalls(compiled)


class _HostCalls:
    def __init__(self, compiled):
        self._compiled = compiled

    def __call__(self, *args):
        try:
            return self._compiled(*args)
        except jax.errors.JaxRuntimeError as e:
            from ..ops.custom import host_error
            raise host_error(e) from None

    def __getattr__(self, name):  # memory_analysis, ...
        return getattr(self._compiled, name)


def unstorable() -> None:
    """Keep the program `build` is making on this thread out of the folder: an op's lowering
    calls this when the executable holds what a file cannot (callbacks into Python)."""
    _local.storable = False


def program_name(base: str) -> str:
    """The name for a program `build()` is making: `base` plus its key's digest.

    JAX names its own cache entries after the program, so each entry belongs to one
    jbind key and one jbind version: after an upgrade JAX's entries miss as jbind's do,
    and a fresh compile is stored here again.
    """
    tag = getattr(_local, "tag", None)
    return f"{base}_{tag}" if tag else base


def named(fn, base: str):
    """`fn` under the name `program_name(base)` (what `jax.jit` names the program)."""
    def program(*args):
        return fn(*args)
    program.__name__ = program.__qualname__ = program_name(base)
    return program


def _forget_jax_entries(folder: str, tag: str) -> None:
    """Remove JAX's entries for this key's program. jbind's own entry is missing or was
    rejected; a JAX cache hit could not be stored (it serializes without object code on
    CPU), so every later start would trace and lower again. Compiled afresh, it is."""
    try:
        names = [e.name for e in os.scandir(folder) if f"_{tag}-" in e.name]
    except OSError:
        return
    for name in names:
        _remove(os.path.join(folder, name))


def _listen():
    if not _listening:
        def on_event(event, **kwargs):
            if event == "/jax/compilation_cache/cache_hits":
                _local.jax_cache_hit = True
        jax.monitoring.register_event_listener(on_event)
        _listening.append(on_event)


@functools.lru_cache(maxsize=1)
def _environment() -> str:
    """What, besides the key, decides the compiled program."""
    import jaxlib

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    h = hashlib.sha256()
    for folder, _, files in sorted(os.walk(root)):
        for name in sorted(files):
            if name.endswith(".py"):
                with open(os.path.join(folder, name), "rb") as f:
                    h.update(name.encode() + b"\0" + f.read())
    devices = ",".join(f"{d.platform}:{d.device_kind}" for d in _local_devices())
    return "|".join([h.hexdigest(), jax.__version__, jaxlib.__version__, os.environ.get("XLA_FLAGS", ""),
                     str(jax.config.jax_enable_x64), devices,
                     os.environ.get("JBIND_CONV_FORM", ""),  # picks the convolutions' lowering
                     os.environ.get("JBIND_SMALL_PROGRAM_BYTES", ""),  # these two pick XLA's pipeline (_options)
                     os.environ.get("JBIND_XLA_FUSION_EMITTERS", "")])


def _digest(key) -> str:
    return hashlib.sha256(repr((key, _environment())).encode()).hexdigest()


def _file(folder: str, key) -> str:
    return os.path.join(folder, f"jbind-exe-{_digest(key)[:40]}")


def _local_devices() -> list:
    """Every device an executable may name: the default backend's and the CPU's (on a GPU
    machine the default backend is the GPU, and `mx.cpu()` still names CPU devices)."""
    return [d for b in dict.fromkeys([jax.default_backend(), "cpu"]) for d in jax.local_devices(backend=b)]


def _devices_of(key):
    by_name = {str(d): d for d in _local_devices()}
    try:
        return [by_name[name] for name in key.devices]
    except KeyError:
        return None


def load(key):
    """The stored executable for `key`, or None (no folder, no entry, or a bad entry)."""
    folder = persistent.persistent_cache_dir()
    if folder is None:
        return None
    path = _file(folder, key)
    try:
        with open(path, "rb") as f:
            blob = f.read()
    except FileNotFoundError:
        return None
    except OSError as e:
        persistent._warn_once(folder, f"cannot read {path} ({type(e).__name__}: {e})")
        return None
    devices = _devices_of(key)
    if devices is None:
        return None
    try:
        compiled = _entry.decode(blob, _digest(key), devices)
    except _entry.BadEntry as e:  # compile instead, and replace it
        return _reject(folder, path, str(e))
    if compiled is None:
        return _reject(folder, path, "another key's")
    _folder.touch(path)
    counts["loaded"] += 1
    return compiled


def save(key, compiled) -> None:
    """Store `compiled` for `key` (best effort: a failure warns once and changes nothing)."""
    folder = persistent.persistent_cache_dir()
    if folder is None or not isinstance(compiled, jax.stages.Compiled):
        return
    blob = _entry.encode(_digest(key), compiled)
    if blob is None:  # an executable JAX cannot serialize: it stays in memory only
        return
    try:
        atomic_write_bytes(_file(folder, key), blob)
        counts["saved"] += 1
    except OSError as e:
        persistent._warn_once(folder, f"cannot write executables ({type(e).__name__}: {e})")
        return
    _folder.evict(folder)


def _reject(folder: str, path: str, why: str):
    counts["rejected"] += 1
    persistent._warn_once(folder, f"{why} executable {os.path.basename(path)} removed")
    _remove(path)
    return None


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass
