"""The persistent cache folder: who may own it, and how big it may grow.

An entry in the folder is a compiled program that jbind loads and runs, so the folder
must be the user's own: created `0700`, and refused (the cache then stays off) when
another user owns it or its group or others may write to it. Its size is bounded by
`JBIND_CACHE_MAX_BYTES` (default 4 GiB): after each write the least recently used
entries (by modification time, which a hit refreshes) are removed until the folder fits.
"""
from __future__ import annotations

import os
import stat

from ..base import MXNetError

DEFAULT_MAX_BYTES = 4 << 30
ENV_MAX_BYTES = "JBIND_CACHE_MAX_BYTES"


def make_private(path: str) -> str | None:
    """Create `path` (mode 0700) if missing. -> None if it is a folder jbind may use, else why not."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.stat(path)
    except OSError as e:
        return f"cannot create the folder ({type(e).__name__}: {e})"
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a folder"
    if st.st_uid != os.geteuid():
        return (f"the folder is owned by uid {st.st_uid}, not by this user (uid {os.geteuid()}); its entries "
                "are programs jbind would run")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return (f"the folder is writable by its group or by others (mode {stat.S_IMODE(st.st_mode):o}); its "
                "entries are programs jbind would run, so jbind uses only a private folder (chmod 700)")
    return None


def max_bytes() -> int:
    """The folder's size bound, from `JBIND_CACHE_MAX_BYTES` (bytes, a positive integer)."""
    raw = os.environ.get(ENV_MAX_BYTES, "").strip()
    if not raw:
        return DEFAULT_MAX_BYTES
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value <= 0:
        raise MXNetError(f"{ENV_MAX_BYTES} must be a positive number of bytes, got {raw!r}")
    return value


def is_entry(name: str) -> bool:
    """jbind's executables and JAX's cache entries (never a temp file being written)."""
    return not name.startswith(".") and (name.startswith("jbind-exe-") or name.endswith(("-cache", "-atime")))


def touch(path) -> None:
    """Mark an entry as just used (a hit), so eviction keeps it longest."""
    try:
        os.utime(path)
    except OSError:
        pass


def evict(folder: str, limit: int | None = None) -> list:
    """Remove least recently used entries until the folder's entries total at most `limit`
    bytes (default `max_bytes()`). -> the names removed."""
    limit = max_bytes() if limit is None else limit
    entries = []
    try:
        with os.scandir(folder) as it:
            for e in it:
                if is_entry(e.name):
                    try:
                        st = e.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if stat.S_ISREG(st.st_mode):
                        entries.append((st.st_mtime_ns, e.name, st.st_size))
    except OSError:
        return []
    total = sum(size for _, _, size in entries)
    removed = []
    for _, name, size in sorted(entries):
        if total <= limit:
            break
        try:
            os.remove(os.path.join(folder, name))
        except FileNotFoundError:
            pass
        except OSError:
            continue
        total -= size
        removed.append(name)
    return removed
