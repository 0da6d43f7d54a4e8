"""`mx.kvstore.KVStoreBase`: the interface of a key-value store and its registry (MXNet 1.9).

A class decorated with `KVStoreBase.register` is made by `mx.kv.create(its lower-case
name)`, which is how MXNet 1.9 plugs in Horovod, BytePS or a user's own store; `Trainer`
drives any such store through `broadcast` and `pushpull`, and updates the weights itself
when the store is not capable of 'optimizer'. `TestStore` ('teststore') is MXNet's
smallest such store: it sums in this process and has no optimizer.
"""
from __future__ import annotations

import warnings

__all__ = ["KVStoreBase", "TestStore"]


class KVStoreBase:
    """The interface every key-value store offers (MXNet 1.9's `mx.kvstore.KVStoreBase`).

    Subclasses implement `broadcast`, `pushpull`, `is_capable`, `type`, `rank` and
    `num_workers`; `set_optimizer` and the optimizer-state methods only where
    `is_capable(KVStoreBase.OPTIMIZER)`.
    """

    OPTIMIZER = "optimizer"
    kv_registry: dict = {}

    def broadcast(self, key, value, out, priority=0):
        """Set every `out` to `value` (rank 0's, across workers)."""
        raise NotImplementedError()

    def pushpull(self, key, value, out=None, priority=0):
        """Sum `value` (a list: one per device) and write the sum into `out` (or into `value`)."""
        raise NotImplementedError()

    def set_optimizer(self, optimizer):
        """Make the store update the weights it holds with `optimizer`."""
        raise NotImplementedError()

    def is_capable(self, capability):
        """Whether the store supports `capability` (KVStoreBase.OPTIMIZER)."""
        raise NotImplementedError()

    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Write the optimizer states to `fname`."""
        raise NotImplementedError()

    def load_optimizer_states(self, fname):
        """Read optimizer states written by `save_optimizer_states`."""
        raise NotImplementedError()

    @property
    def type(self):
        """The store's type name."""
        raise NotImplementedError()

    @property
    def rank(self):
        """This worker's rank."""
        raise NotImplementedError()

    @property
    def num_workers(self):
        """How many workers share the store."""
        raise NotImplementedError()

    @staticmethod
    def register(klass):
        """Class decorator: `mx.kv.create(klass.__name__.lower())` makes a `klass()`. A name
        registered twice warns, and the later class wins (as MXNet's)."""
        if not isinstance(klass, type):
            raise TypeError(f"KVStoreBase.register decorates a class; got {type(klass).__name__}")
        name = klass.__name__.lower()
        old = KVStoreBase.kv_registry.get(name)
        if old is not None:
            warnings.warn(f"WARNING: New kvstore {klass.__module__}.{klass.__name__} is overriding existing "
                          f"kvstore {old.__module__}.{old.__name__}", stacklevel=2)
        KVStoreBase.kv_registry[name] = klass
        return klass


def _as_list(x):
    return x if isinstance(x, (list, tuple)) else [x]


@KVStoreBase.register
class TestStore(KVStoreBase):
    """MXNet's test store: `pushpull` sums the values of one key in this process; it has no
    optimizer (a Trainer using it updates the weights itself)."""

    def broadcast(self, key, value, out, priority=0):
        for o in _as_list(out):
            o[:] = value

    def pushpull(self, key, value, out=None, priority=0):
        values = _as_list(value)
        ctx = values[0].context
        total = values[0].as_in_context(ctx).copy()
        for v in values[1:]:
            total += v.as_in_context(ctx)
        for o in _as_list(value if out is None else out):
            o[:] = total

    def is_capable(self, capability):
        if capability.lower() == KVStoreBase.OPTIMIZER:
            return False
        raise ValueError(f"Unknown capability: {capability}")

    @property
    def type(self):
        return "teststore"

    @property
    def rank(self):
        return 0

    @property
    def num_workers(self):
        return 1
