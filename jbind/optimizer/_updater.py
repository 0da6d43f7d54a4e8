"""MXNet's `Updater`: an optimizer applied to (index, grad, weight) triples, one state per index."""
from __future__ import annotations

from ..ndarray import NDArray
from . import _states
from ._base import Optimizer


class Updater:
    """Applies an optimizer to (index, grad, weight) triples, keeping one state per index (as KVStore)."""

    def __init__(self, optimizer: Optimizer):
        self.optimizer = optimizer
        self.states: dict = {}
        self.states_synced: dict = {}
        self.aggregate_updates = optimizer.aggregate_num > 0

    def __call__(self, index, grad, weight) -> None:
        if not isinstance(index, (list, tuple)):
            index, grad, weight = [index], [grad], [weight]
        if weight:
            self.optimizer._set_current_context(weight[0].context.device_id)
        index = [i.decode() if isinstance(i, bytes) else i for i in index]
        fresh = [(i, w) for i, w in zip(index, weight) if i not in self.states]
        if fresh:
            made = self.optimizer.create_states([i for i, _ in fresh], [w for _, w in fresh])
            for (i, _), s in zip(fresh, made):
                self.states[i] = s
                self.states_synced[i] = True
        for i, w in zip(index, weight):
            if not self.states_synced[i]:
                self.states[i] = self.sync_state_context(self.states[i], w.context)
                self.states_synced[i] = True
        self.optimizer.update_batch(index, list(weight), list(grad), [self.states[i] for i in index])

    def sync_state_context(self, state, context):
        if isinstance(state, NDArray):
            return state.as_in_context(context)
        if isinstance(state, (tuple, list)):
            synced = [self.sync_state_context(s, context) for s in state]
            return tuple(synced) if isinstance(state, tuple) else synced
        return state

    def set_states(self, states: bytes) -> None:
        """Load states (and the optimizer, if it was dumped) from `get_states`' bytes or
        from MXNet's (`Module.save_optimizer_states`).

        The bytes are data: only arrays, numbers, containers and jbind's optimizers and
        schedulers are read from them (anything else is an `MXNetError` naming it), and what
        was read is checked before it replaces this updater's states or optimizer.
        """
        states, optimizer = _states.unpack(_states.loads(states))
        self.states = states
        if optimizer is not None:
            self.optimizer = optimizer
        self.states_synced = dict.fromkeys(self.states.keys(), False)

    def get_states(self, dump_optimizer: bool = False) -> bytes:
        """Pickled states, with the optimizer when `dump_optimizer` (its rate schedule, counts).

        NDArrays are pickled as MXNet pickles them, so MXNet reads the states-only form.
        """
        return _states.dumps((self.states, self.optimizer) if dump_optimizer else self.states)


def get_updater(optimizer: Optimizer) -> Updater:
    """An `Updater` closure over `optimizer`, as MXNet's."""
    return Updater(optimizer)
