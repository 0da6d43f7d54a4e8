"""ParamStore: parameters, their gradients and aux states, one handle per (device, name).

Every executor group built with `shared_group`, and so every bucket of a
BucketingModule, holds the same ParamStore object: parameters are never copied per
bucket. An update replaces a handle's array, and every holder sees it.
"""
from __future__ import annotations

import numpy as np

from ..base import MXNetError
from ..ndarray.ndarray import NDArray, cached_zeros


class ParamStore:
    """Per-device dicts of NDArray handles: `params[i][name]`, `grads[i][name]`, `aux[i][name]`."""

    def __init__(self, contexts):
        self.contexts = list(contexts)
        self.devices = [c.jax_device for c in self.contexts]
        self.params = [dict() for _ in self.contexts]
        self.grads = [dict() for _ in self.contexts]
        self.aux = [dict() for _ in self.contexts]

    def _get(self, table, i, name, shape, dtype, what):
        h = table[i].get(name)
        if h is None:
            h = table[i][name] = NDArray(cached_zeros(shape, dtype, self.devices[i]))
            return h
        d = h._data
        if d.shape != shape or d.dtype != dtype:
            raise MXNetError(f"{what} {name!r} is shared with shape {d.shape} {d.dtype.name}, but this symbol "
                             f"needs {tuple(shape)} {np.dtype(dtype).name}")
        return h

    def param(self, i, name, shape, dtype) -> NDArray:
        return self._get(self.params, i, name, shape, dtype, "parameter")

    def grad(self, i, name, shape, dtype) -> NDArray:
        return self._get(self.grads, i, name, shape, dtype, "gradient of")

    def aux_state(self, i, name, shape, dtype) -> NDArray:
        return self._get(self.aux, i, name, shape, dtype, "aux state")

    def nbytes(self) -> int:
        """Bytes of distinct parameter and aux buffers alive in the store (one copy per device)."""
        seen, total = set(), 0
        for table in (self.params, self.aux):
            for per_dev in table:
                for h in per_dev.values():
                    if id(h._data) not in seen:
                        seen.add(id(h._data))
                        total += h._data.nbytes
        return total
