"""Attribute scopes, as MXNet's `mx.AttrScope`."""
from __future__ import annotations

import threading

_local = threading.local()


class AttrScope:
    """Attaches string attributes to every symbol created inside its `with` block."""

    def __init__(self, **kwargs):
        for v in kwargs.values():
            if not isinstance(v, str):
                raise ValueError("Attributes need to be string")
        self._attr = kwargs
        self._old = None

    def get(self, attr):
        if self._attr:
            out = dict(self._attr)
            if attr:
                out.update(attr)
            return out
        return dict(attr) if attr else {}

    def __enter__(self):
        self._old = current()
        merged = dict(self._old._attr)
        merged.update(self._attr)
        self._attr = merged
        _local.current = self
        return self

    def __exit__(self, *exc):
        _local.current = self._old


def current() -> AttrScope:
    cur = getattr(_local, "current", None)
    if cur is None:
        cur = _local.current = AttrScope()
    return cur
