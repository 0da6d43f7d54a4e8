"""The Optimizer's imperative face, MXNet's API: states as NDArrays in MXNet's layout
(`create_state`, `create_state_multi_precision`, `create_states`) and `update` /
`update_multi_precision` writing the new weight and states into those handles, with
MXNet's lazy update of a row_sparse gradient's rows. A mixin of `Optimizer` (_base.py),
whose functional `init_state` / `step` / `_compiled_step` / `prepare` it runs."""
from __future__ import annotations

import warnings

import jax
import numpy as np

from ..ndarray import NDArray, RowSparseNDArray
from ._host_init import host_states


class ImperativeAPI:
    """`create_state*` and `update*` over the functional rule (see _base.Optimizer)."""

    def create_state(self, index, weight: NDArray):
        """The state of parameter `index`: NDArrays in MXNet's layout, or None (no master
        copy: `create_state_multi_precision` adds it)."""
        return jax.tree.map(NDArray, self._init_state(weight._data))

    def create_state_multi_precision(self, index, weight: NDArray):
        """`create_state`; under multi_precision for a float16 weight `(create_state of a
        float32 master copy, the master copy)`, as MXNet (and as `init_state`)."""
        if self._keeps_master(weight):
            master = weight.astype(np.float32)
            return (self.create_state(index, master), master)
        if np.dtype(weight.dtype) == np.float16 and not self.multi_precision:
            warnings.warn("Accumulating with float16 in optimizer can lead to poor accuracy or slow "
                          "convergence. Consider using multi_precision=True option of the optimizer", stacklevel=3)
        return self.create_state(index, weight)

    def create_states(self, indices, weights) -> list:
        """`create_state_multi_precision` of several parameters. Where the states are this
        class's `init_state` of plain arrays, constants are made on the host and anything
        else in one compiled call: one at a time, each distinct weight shape compiled a small
        program (17 for resnet18), together costing seconds of CPU before the first step."""
        cls = type(self)
        plain = (cls.create_state is ImperativeAPI.create_state
                 and cls.create_state_multi_precision is ImperativeAPI.create_state_multi_precision
                 and all(type(w) is NDArray and np.dtype(w.dtype) != np.float16 for w in weights))
        states = None
        if plain and weights:
            arrays = tuple(w._data for w in weights)
            states = host_states(self.init_state, arrays)
            # one call needs one device; committed arrays in, committed out, as `step` returns them
            if states is None and len(arrays) > 1 and len({w.context for w in weights}) == 1 \
                    and all(a.committed for a in arrays):
                states = self._jitted("init", lambda opt: lambda ws: tuple(opt.init_state(w) for w in ws))(arrays)
        if states is None:
            return [self.create_state_multi_precision(i, w) for i, w in zip(indices, weights)]
        return [jax.tree.map(NDArray, s) for s in states]

    def _functional_state(self, state):
        if state is None:   # the common layouts without a tree walk (a step pays it per parameter)
            return None
        if type(state) is NDArray:
            return state._data
        return jax.tree.map(lambda h: h._data, state)

    def _store_state(self, state, new_state) -> None:
        if state is None and new_state is None:
            return
        if type(state) is NDArray and isinstance(new_state, jax.Array):
            state._data = new_state
            return
        for h, v in zip(jax.tree.leaves(state), jax.tree.leaves(new_state)):
            h._data = v

    def update(self, index, weight: NDArray, grad: NDArray, state) -> None:
        """Update `weight` in place from `grad`; `state` (from `create_state`) is updated in place."""
        if isinstance(index, (list, tuple)):
            for i, w, g, s in zip(index, weight, grad, state):
                self.update(i, w, g, s)
            return
        if not isinstance(weight, NDArray) or not isinstance(grad, NDArray):
            raise TypeError(f"update expects NDArrays, got {type(weight).__name__} and {type(grad).__name__}")
        if self._lazy() and isinstance(grad, RowSparseNDArray):
            self._update_rows(index, weight, grad, state)
            return
        (lr,), (wd,), (t,) = self.prepare([index])
        new_weight, new_state = self._compiled_step()(weight._data, grad._data, self._functional_state(state),
                                                      lr, wd, t)
        weight._data = new_weight
        self._store_state(state, new_state)

    def _lazy(self) -> bool:
        """A row_sparse gradient updates only its rows (MXNet's lazy update)."""
        return False

    def _update_rows(self, index, weight, grad, state) -> None:
        """The lazy update: the rule on the gradient's rows of the weight and the state, the
        other rows (weight decay and momentum included) left as they are."""
        (lr,), (wd,), (t,) = self.prepare([index])
        rows = grad._aux[0]
        full = self._functional_state(state)
        new_w, new_s = self._compiled_step()(weight._data[rows], grad._values.astype(weight._data.dtype),
                                             jax.tree.map(lambda a: a[rows], full), lr, wd, t)
        weight._data = weight._data.at[rows].set(new_w)
        self._store_state(state, jax.tree.map(lambda a, part: a.at[rows].set(part), full, new_s))

    def update_multi_precision(self, index, weight, grad, state) -> None:
        """`update`; under multi_precision for a float16 weight, `update` of the float32
        master copy in `state` with a float32 gradient, then the weight set to it rounded."""
        if isinstance(index, (list, tuple)):
            for i, w, g, s in zip(index, weight, grad, state):
                self.update_multi_precision(i, w, g, s)
            return
        if self._keeps_master(weight) and isinstance(state, (tuple, list)) and len(state) == 2 \
                and isinstance(state[1], NDArray) and np.dtype(state[1].dtype) == np.float32:
            inner, master = state
            self.update(index, master, grad.astype(np.float32), inner)
            weight._data = master._data.astype(weight._data.dtype)
            return
        self.update(index, weight, grad, state)
