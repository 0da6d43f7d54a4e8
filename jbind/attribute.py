"""Attribute scopes, as MXNet's `mx.AttrScope`."""
from __future__ import annotations

import collections
import threading
import warnings

_local = threading.local()

# The keys MXNet stores as `__key__` however they are given (nnvm's hidden keys).
HIDDEN_KEYS = ("ctx_group", "lr_mult", "wd_mult", "force_mirroring", "mirror_stage", "profiler_scope")


def hide(attrs: dict) -> dict:
    """MXNet stores the hidden keys it is given bare (`lr_mult`, from `attr=` or an
    AttrScope) as `__lr_mult__`, where the optimizer and `tojson` look for them."""
    return {f"__{k}__" if k in HIDDEN_KEYS else k: v for k, v in attrs.items()}


class _AttrScopeType(type):
    """Gives the class MXNet's deprecated `AttrScope.current` (read and assigned on the class)."""

    @property
    def current(cls) -> "AttrScope":
        """[DEPRECATED] This thread's current scope; assigning replaces it."""
        warnings.warn("AttrScope.current has been deprecated. It is advised to use the `with` statement "
                      "with AttrScope.", DeprecationWarning, stacklevel=2)
        return current()

    @current.setter
    def current(cls, scope) -> None:
        warnings.warn("AttrScope.current has been deprecated. It is advised to use the `with` statement "
                      "with AttrScope.", DeprecationWarning, stacklevel=2)
        if not isinstance(scope, AttrScope):
            raise TypeError(f"AttrScope.current must be set to an AttrScope, got {type(scope).__name__}")
        _local.current = scope


class AttrScope(metaclass=_AttrScopeType):
    """Attaches string attributes to every symbol created inside its `with` block."""

    # How many control-flow subgraphs of each name were made (MXNet's counter: foreach0, ...).
    _subgraph_names = collections.defaultdict(int)

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
