"""`mx.kv` / `mx.kvstore`: MXNet 1.x's key-value store, in one process or across workers.

    kv = mx.kv.create('local')                 # or 'device', 'dist_sync', 'dist_device_sync'
    kv.init(3, mx.nd.zeros((2, 3)))
    kv.push(3, [grad_on_cpu0, grad_on_cpu1])   # the values of one key are summed
    kv.pull(3, out=[w_on_cpu0, w_on_cpu1])     # the stored value is written into every out
    kv.set_optimizer(mx.optimizer.SGD())       # push now updates the stored weight instead

`local`, `device`, `nccl` (and MXNet's `local_update_cpu`, `local_allreduce_cpu`,
`local_allreduce_device`) are one store in this process (JAX moves the arrays; there
is no CPU-versus-GPU merge to choose). `dist_sync` and `dist_device_sync` also sum every
push over all workers of a `jbind.distributed` job, in one collective per `push` call
(every key of the call together), and `init` takes rank 0's values. There are no
servers: each worker keeps the whole store and, after `set_optimizer`, applies the same
update to the same summed gradient, so every worker holds the same weights, as MXNet's
servers would have sent back. Every worker must therefore make the same calls, with the
same keys in the same order.

Row_sparse values are stored, summed and pulled as MXNet's (`row_sparse_pull` writes only
the requested rows; `pull` skips row_sparse outs unless `ignore_sparse=False`).

Differences from MXNet: `dist_async` and gradient compression are not supported
(`MXNetError`); an unknown kvstore name is an error rather than a local store;
a dist store in a process that is not part of a job is a one-worker store; errors are
raised by the call that causes them (MXNet's pushes fail later, asynchronously); and
optimizer states can be saved from a dist store (every worker holds them).
"""
from __future__ import annotations

import numbers

import jax
import numpy as np

from . import distributed
from ._kvstore_base import KVStoreBase, TestStore  # noqa: F401  (TestStore: registered as "teststore")
from .base import MXNetError
from .io_util import atomic_write_bytes
from .ndarray import NDArray
from .optimizer import get_updater

__all__ = ["KVStore", "KVStoreBase", "create"]

# MXNet's names for its single-process stores (where it reduces and updates); here they
# are all the one store, and `type` reports the name given, as MXNet's does.
_LOCAL = {n: n for n in ("local", "device", "nccl", "local_update_cpu", "local_allreduce_cpu",
                         "local_allreduce_device")}
_DIST = {"dist_sync": "dist_sync", "dist_device_sync": "dist_device_sync", "dist_sync_device": "dist_sync_device",
         "dist": "dist_sync"}
_UNSUPPORTED = {
    "dist_async": "asynchronous updates are not supported; use 'dist_sync' (every worker sums the gradients "
                  "of each step before updating)",
    "dist_device_async": "asynchronous updates are not supported; use 'dist_device_sync'",
    "horovod": "Horovod is not supported; use 'dist_sync' with `python -m jbind.launch`",
    "byteps": "BytePS is not supported; use 'dist_sync' with `python -m jbind.launch`",
}


def create(name: str = "local") -> "KVStore":
    """A new KVStore of type `name` (case-insensitive).

    Args:
        name: 'local', 'device' (or 'nccl'): one process; 'dist_sync' or 'dist_device_sync':
            every worker of the `jbind.distributed` job (see `python -m jbind.launch`); or
            the name of a class registered with `KVStoreBase.register` ('teststore').

    Raises:
        TypeError: `name` is not a string.
        MXNetError: an unknown or unsupported type ('dist_async', 'horovod', ...).
    """
    if not isinstance(name, str):
        raise TypeError("name must be a string")
    kv_type = name.lower()
    if kv_type in KVStoreBase.kv_registry:
        return KVStoreBase.kv_registry[kv_type]()
    if kv_type in _UNSUPPORTED:
        raise MXNetError(f"kvstore {name!r}: {_UNSUPPORTED[kv_type]}")
    if kv_type in _LOCAL:
        return KVStore(_LOCAL[kv_type], dist=False)
    if kv_type in _DIST:
        return KVStore(_DIST[kv_type], dist=True)
    raise MXNetError(f"unknown kvstore type {name!r}; known: {sorted(set(_LOCAL) | set(_DIST) - {'dist'})}")


def _norm_key(key):
    if isinstance(key, str):
        return key
    if isinstance(key, numbers.Integral) and not isinstance(key, bool):
        return int(key)
    raise MXNetError(f"a kvstore key must be an int or a str, got {type(key).__name__} {key!r}")


def _check_nd(value, what):
    if not isinstance(value, NDArray):
        raise MXNetError(f"{what} must be an NDArray, got {type(value).__name__}")
    return value


def _pairs(keys, values, what: str) -> list:
    """MXNet's key/value forms -> [(key, [NDArray, ...])] in call order.

    A single key takes an NDArray or a list of them (one per device); a list of keys takes a
    list of the same length, each item an NDArray or a list of them.
    """
    if isinstance(keys, (list, tuple)):
        if not isinstance(values, (list, tuple)) or len(values) != len(keys):
            n = len(values) if isinstance(values, (list, tuple)) else 1
            raise MXNetError(f"{what}: {len(keys)} keys but {n} values; give one value (or one list of "
                             "per-device values) per key")
        out = [(_norm_key(k), _values(k, v, what)) for k, v in zip(keys, values)]
    else:
        out = [(_norm_key(keys), _values(keys, values, what))]
    kinds = {type(k) for k, _ in out}
    if len(kinds) > 1:
        raise MXNetError(f"{what}: keys mix int and str ({[k for k, _ in out]}); use one kind")
    return out


def _values(key, value, what):
    if isinstance(value, (list, tuple)):
        if not value:
            raise MXNetError(f"{what}: key {key!r} was given an empty list of values")
        return [_check_nd(v, f"{what}: a value of key {key!r}") for v in value]
    return [_check_nd(value, f"{what}: the value of key {key!r}")]


def _device(arr: NDArray):
    return next(iter(arr._data.devices() if arr.stype == "default" else arr._values.devices()))


class KVStore(KVStoreBase):
    """A key-value store of NDArrays, as MXNet 1.x's `KVStore`; made by `create`.

    Keys are ints or strs (one kind per store). Values live where `init` found them; pushed
    values are moved there and summed in the stored dtype.
    """

    def __init__(self, kv_type: str, dist: bool):
        self._type = kv_type
        self._dist = dist
        self._store: dict = {}
        self._key_kind = None
        self._updater = None

    # --- identity -------------------------------------------------------------------------
    @property
    def type(self) -> str:
        """The store's type, e.g. 'local' or 'dist_sync'."""
        return self._type

    @property
    def rank(self) -> int:
        """This worker's rank (0 for a local store)."""
        return distributed.rank() if self._dist else 0

    @property
    def num_workers(self) -> int:
        """How many workers share the store (1 for a local store)."""
        return distributed.num_workers() if self._dist else 1

    def is_capable(self, capability: str) -> bool:
        """Whether the store supports `capability` ('optimizer': yes)."""
        if capability.lower() == "optimizer":
            return True
        raise ValueError(f"Unknown capability: {capability}")

    def _collective(self) -> bool:
        return self._dist and distributed.is_distributed()

    def _check_kind(self, pairs, what):
        if not pairs:
            return None
        kind = type(pairs[0][0])
        if self._key_kind is not None and kind is not self._key_kind:
            raise MXNetError(f"{what}: this store holds {self._key_kind.__name__} keys; got "
                             f"{kind.__name__} key {pairs[0][0]!r} (mixed key types are not allowed)")
        return kind

    def _stored(self, key, what) -> NDArray:
        stored = self._store.get(key)
        if stored is None:
            raise MXNetError(f"{what}: key {key!r} has not been initialized; call kv.init({key!r}, value) first")
        return stored

    # --- init / push / pull ---------------------------------------------------------------
    def init(self, key, value) -> None:
        """Store the first value of each key; in a dist store every worker gets rank 0's values.

        Raises:
            MXNetError: a key initialized twice, or given several values.
        """
        pairs = self._check_init(_pairs(key, value, "init"))
        if not pairs:
            return
        self._key_kind = type(pairs[0][0])
        values = [vals[0] for _, vals in pairs]
        if self._collective():
            got = distributed.broadcast_from_rank0([v.asnumpy() for v in values])
            values = [NDArray(jax.device_put(np.asarray(g, dtype=v.dtype), _device(v))).tostype(v.stype)
                      for g, v in zip(got, values)]
        for (k, _), v in zip(pairs, values):
            # a copy: the caller's buffer may later be donated to a compiled training step
            self._store[k] = NDArray(v._data.copy()) if v.stype == "default" else v.copy()

    def _check_init(self, pairs):
        self._check_kind(pairs, "init")
        seen = set()
        for k, vals in pairs:
            if len(vals) != 1:
                raise MXNetError(f"init: key {k!r} was given {len(vals)} values; init takes one value per key")
            if k in self._store or k in seen:
                raise MXNetError(f"init: duplicate init of key {k!r}; call kv.init (or broadcast) once per key")
            seen.add(k)
        return pairs

    def push(self, key, value, priority: int = 0) -> None:
        """Sum each key's values (and, in a dist store, over all workers), then store the sum,
        or, after `set_optimizer`, update the stored weight with it. `priority` is ignored.

        Raises:
            MXNetError: an uninitialized key, or a value whose shape differs from the stored one.
        """
        merged = self._merge(_pairs(key, value, "push"))
        if self._collective() and merged:
            sums = distributed.allreduce_sum([m for m in merged.values()])
            merged = {k: jax.device_put(s, _device(self._store[k])) for k, s in zip(merged, sums)}
        for k, m in merged.items():
            stored = self._store[k]
            if self._updater is not None:
                self._updater(k, NDArray(m), stored)
            else:
                stored._data = m

    def _merge(self, pairs) -> dict:
        """key -> the sum of its values in this push (a key listed twice sums both), as a jax.Array
        on the stored value's device, in the stored dtype."""
        self._check_kind(pairs, "push")
        grouped: dict = {}
        for k, vals in pairs:
            stored = self._stored(k, "push")
            for v in vals:
                if v.shape != stored.shape:
                    raise MXNetError(f"push: key {k!r} holds shape {stored.shape}; a pushed value has "
                                     f"shape {v.shape}")
            grouped.setdefault(k, []).extend(vals)
        merged = {}
        for k, vals in grouped.items():
            stored = self._store[k]
            dev, dtype = _device(stored), stored._data.dtype
            xs = [jax.device_put(v._data.astype(dtype), dev) for v in vals]
            total = xs[0]
            for x in xs[1:]:
                total = total + x
            # never keep the caller's own buffer: it may later be donated to a compiled step
            merged[k] = total.copy() if total is vals[0]._data else total
        return merged

    def pull(self, key, out=None, priority: int = 0, ignore_sparse: bool = True) -> None:
        """Write each key's stored value into its `out` array(s) (a list: one per device).
        With `ignore_sparse` (the default), row_sparse outs are left as they are (use
        `row_sparse_pull`). `priority` is ignored.

        Raises:
            MXNetError: no `out`, an uninitialized key, or an `out` of another shape.
        """
        if out is None:
            raise MXNetError("pull: `out` must be given (the NDArray(s) to write each key's value into)")
        pairs = _pairs(key, out, "pull")
        self._check_kind(pairs, "pull")
        for k, outs in pairs:
            stored = self._stored(k, "pull")
            for o in outs:
                if o.shape != stored.shape:
                    raise MXNetError(f"pull: key {k!r} holds shape {stored.shape}; `out` has shape {o.shape}")
        for k, outs in pairs:
            for o in outs:
                if not (ignore_sparse and o.stype == "row_sparse"):
                    o[:] = self._store[k]

    def pushpull(self, key, value, out=None, priority: int = 0) -> None:
        """`push(key, value)` then `pull(key, out)`; without `out` the result goes into `value`."""
        self.push(key, value, priority)
        self.pull(key, out=value if out is None else out, priority=priority)

    def broadcast(self, key, value, out, priority: int = 0) -> None:
        """`init(key, value)` (rank 0's value in a dist store), then `pull(key, out)`."""
        self.init(key, value)
        self.pull(key, out=out, priority=priority)

    def row_sparse_pull(self, key, out=None, priority: int = 0, row_ids=None):
        """Write into each row_sparse `out` only the rows of the stored value listed in its
        `row_ids` (an NDArray of row indices, repeats allowed; one per out, or one for all
        outs of a key). `priority` is ignored.

        Raises:
            MXNetError: no `out` or `row_ids`, an out that is not row_sparse, an uninitialized
                key, or row_ids that do not match the outs.
        """
        from .ndarray.sparse import retain
        if out is None or row_ids is None:
            raise MXNetError("row_sparse_pull: `out` and `row_ids` must both be given")
        pairs = _pairs(key, out, "row_sparse_pull")
        self._check_kind(pairs, "row_sparse_pull")
        ids = _pairs(key, row_ids, "row_sparse_pull(row_ids)")
        for (k, outs), (_, rids) in zip(pairs, ids):
            stored = self._stored(k, "row_sparse_pull")
            if len(rids) == 1:
                rids = rids * len(outs)
            if len(rids) != len(outs):
                raise MXNetError(f"row_sparse_pull: key {k!r} has {len(outs)} outs but {len(rids)} row_ids")
            for o in outs:
                if o.stype != "row_sparse":
                    raise MXNetError(f"row_sparse_pull: every out must be a row_sparse NDArray; key {k!r} has "
                                     f"one of storage type {o.stype!r} (use pull for dense outs)")
                if o.shape != stored.shape:
                    raise MXNetError(f"row_sparse_pull: key {k!r} holds shape {stored.shape}; `out` has shape "
                                     f"{o.shape}")
            rows = stored if stored.stype == "row_sparse" else stored.tostype("row_sparse")
            for o, r in zip(outs, rids):
                o[:] = retain(rows, r)

    # --- optimizer ------------------------------------------------------------------------
    def set_optimizer(self, optimizer) -> None:
        """Make `push` update the stored weights with `optimizer` (MXNet's update_on_kvstore).

        The stored value of a key is the weight; a push is its gradient, summed as always,
        then passed to `optimizer.update` with the key as the index.
        """
        self._updater = get_updater(optimizer)

    def _set_updater(self, updater) -> None:
        """Make `push` call `updater(key, summed_value, stored)` (MXNet's private hook)."""
        self._updater = updater

    def set_gradient_compression(self, compression_params) -> None:
        raise MXNetError("gradient compression is not supported by jbind (gradients are summed at full precision)")

    def save_optimizer_states(self, fname: str, dump_optimizer: bool = False) -> None:
        """Write the optimizer's states (and the optimizer, if `dump_optimizer`) to `fname`,
        atomically, in the format `Module.save_optimizer_states` writes (MXNet reads it)."""
        atomic_write_bytes(fname, self._states_updater("save_optimizer_states").get_states(dump_optimizer))

    def load_optimizer_states(self, fname: str) -> None:
        """Load optimizer states written by `save_optimizer_states` (jbind's or MXNet's)."""
        from .optimizer._states import load_file
        load_file(self._states_updater("load_optimizer_states"), fname)

    def _states_updater(self, what):
        if self._updater is None:
            raise MXNetError(f"{what}: this kvstore has no optimizer; call set_optimizer first")
        if not hasattr(self._updater, "get_states"):
            raise MXNetError(f"{what}: the updater set with _set_updater has no states to save or load")
        return self._updater

    # --- workers --------------------------------------------------------------------------
    def barrier(self) -> None:
        """Wait until every worker reaches this point (nothing to wait for in a local store)."""
        if self._collective():
            distributed.barrier("jbind_kvstore_barrier")

    _barrier = barrier

    def num_dead_node(self, node_id: int = 0, timeout: int = 60) -> int:
        """MXNet's count of unreachable nodes: always 0 (a dead worker stops the whole job)."""
        return 0

    def __repr__(self):
        return f"<KVStore {self._type} rank {self.rank}/{self.num_workers}, {len(self._store)} keys>"
