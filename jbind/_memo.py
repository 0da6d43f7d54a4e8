"""A bounded, thread-safe memo: the one mechanism behind jbind's per-key Python caches
(graph indexes, inference results, bind plans, group plans, parsed ops)."""
from __future__ import annotations

import hashlib

import threading
from collections import OrderedDict


class Memo:
    """A dict of memoized results; past `limit` entries the oldest are dropped."""

    def __init__(self, limit: int):
        self._data: OrderedDict = OrderedDict()
        self._limit = limit
        self._lock = threading.Lock()

    def get(self, key):
        return self._data.get(key)

    def put(self, key, value):
        with self._lock:
            self._data[key] = value
            if len(self._data) > self._limit:
                self._data.popitem(last=False)
        return value

    def __len__(self):
        return len(self._data)


def stable_hash(text: str) -> int:
    """A 64-bit hash of `text`, the same in every process (Python salts str hashes per
    process, which would make graph fingerprints useless to a persistent cache)."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little", signed=True)
