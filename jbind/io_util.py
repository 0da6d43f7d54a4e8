"""Atomic file writes: a temp file in the same folder, fsynced, then renamed.

Every file jbind writes (parameters, checkpoints, symbol JSON, optimizer states,
benchmark results) goes through `atomic_write_bytes`. A reader sees the old file or the
new one, never a part. The temp file is named `.tmp-<target>.<random>` and locked while
it is written; a process killed mid-write leaves it behind unlocked, and the next save
of the same target removes it.
"""
from __future__ import annotations

import os
import re
import tempfile
import time

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: stale temp files are left alone
    fcntl = None

STALE_AFTER_S = 5.0  # a temp file younger than this may be a writer between creating and locking it


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# mkstemp creates files 0600; a saved file gets what open() would give it, as in MXNet.
FILE_MODE = 0o666 & ~_umask()


class AtomicFile:
    """A file written under a temp name beside `path` (locked while it is written) that
    `commit()` syncs and renames to `path`; until then, a file at `path` stays as it was.
    `abort()` (or a failure inside `with`) removes the temp file."""

    def __init__(self, path: str):
        self.path = os.fspath(path)
        self._folder = os.path.dirname(os.path.abspath(self.path))
        fd, self._tmp = tempfile.mkstemp(prefix=f".tmp-{os.path.basename(self.path)}.", dir=self._folder)
        self.file = os.fdopen(fd, "wb")
        _lock(self.file.fileno(), block=True)
        if hasattr(os, "fchmod"):
            os.fchmod(self.file.fileno(), FILE_MODE)

    def commit(self) -> None:
        try:
            self.file.flush()
            os.fsync(self.file.fileno())
            os.replace(self._tmp, self.path)  # before closing: the lock holds until the name is gone
        except BaseException:
            self.abort()
            raise
        self.file.close()
        _fsync_dir(self._folder)
        remove_stale_temps(self.path)

    def abort(self) -> None:
        self.file.close()
        try:
            os.unlink(self._tmp)
        except OSError:
            pass

    def __enter__(self):
        return self.file

    def __exit__(self, kind, *rest):
        if kind is None:
            self.commit()
        else:
            self.abort()


def atomic_write_bytes(path: str, data: bytes) -> None:
    """Write `data` to `path` atomically: temp file, fsync, rename, fsync of the folder."""
    with AtomicFile(path) as f:
        f.write(data)


def remove_stale_temps(path: str) -> list:
    """Remove temp files of `path` that no live writer holds (left by a killed save). -> removed."""
    folder, base = os.path.split(os.path.abspath(os.fspath(path)))
    pattern = re.compile(r"\.tmp-" + re.escape(base) + r"\.?[a-z0-9_]{8}")
    removed = []
    try:
        names = [n for n in os.listdir(folder) if pattern.fullmatch(n)]
    except OSError:
        return removed
    for name in names:
        tmp = os.path.join(folder, name)
        try:
            if time.time() - os.stat(tmp).st_mtime < STALE_AFTER_S:
                continue
            fd = os.open(tmp, os.O_RDONLY)
        except OSError:
            continue
        try:
            if _lock(fd, block=False):
                os.unlink(tmp)
                removed.append(tmp)
        except OSError:
            pass
        finally:
            os.close(fd)
    return removed


def _lock(fd: int, block: bool) -> bool:
    """flock `fd` exclusively; False if another open file holds it (a writer at work)."""
    if fcntl is None:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if block else fcntl.LOCK_NB))
        return True
    except BlockingIOError:
        return False
    except OSError:  # a file system without flock: only the writer's own rename cleans up
        return False


def _fsync_dir(folder: str) -> None:
    """Make the rename durable (best effort: not every platform opens folders)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_text(path: str, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))
