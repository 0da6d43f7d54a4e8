"""Automatic node names, as MXNet's `mx.name` (NameManager, Prefix)."""
from __future__ import annotations

import threading

_local = threading.local()


class NameManager:
    """Gives unnamed nodes `hint + counter` names (`fullyconnected0`)."""

    def __init__(self):
        self._counter: dict[str, int] = {}
        self._old = None

    def get(self, name, hint):
        if name:
            return name
        n = self._counter.get(hint, 0)
        self._counter[hint] = n + 1
        return f"{hint}{n}"

    def __enter__(self):
        self._old = current()
        _local.current = self
        return self

    def __exit__(self, *exc):
        _local.current = self._old


class Prefix(NameManager):
    """Prepends `prefix` to every name made inside its `with` block."""

    def __init__(self, prefix):
        super().__init__()
        self._prefix = prefix

    def get(self, name, hint):
        return self._prefix + super().get(name, hint)


def current() -> NameManager:
    cur = getattr(_local, "current", None)
    if cur is None:
        cur = _local.current = NameManager()
    return cur


