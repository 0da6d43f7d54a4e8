"""Checkpoints of networks built from cells: weights are saved unpacked, loaded packed (MXNet 1.x's)."""
from __future__ import annotations

import warnings

from ._base import BaseRNNCell


def rnn_unroll(cell, length, inputs=None, begin_state=None, input_prefix="", layout="NTC"):
    """Deprecated in MXNet: call `cell.unroll` directly."""
    warnings.warn("rnn_unroll is deprecated. Please call cell.unroll directly.")
    return cell.unroll(length=length, inputs=inputs, begin_state=begin_state, layout=layout)


def _cells(cells):
    return [cells] if isinstance(cells, BaseRNNCell) else cells


def save_rnn_checkpoint(cells, prefix, epoch, symbol, arg_params, aux_params):
    """`mx.model.save_checkpoint` with each cell's weights unpacked (one array per gate)."""
    from ..model import save_checkpoint
    for cell in _cells(cells):
        arg_params = cell.unpack_weights(arg_params)
    save_checkpoint(prefix, epoch, symbol, arg_params, aux_params)


def load_rnn_checkpoint(cells, prefix, epoch):
    """`mx.model.load_checkpoint` with each cell's weights packed again -> (symbol, arg, aux)."""
    from ..model import load_checkpoint
    sym, arg, aux = load_checkpoint(prefix, epoch)
    for cell in _cells(cells):
        arg = cell.pack_weights(arg)
    return sym, arg, aux


def do_rnn_checkpoint(cells, prefix, period=1):
    """An epoch-end callback for `fit` that calls `save_rnn_checkpoint` every `period` epochs."""
    period = int(max(1, period))

    def _callback(iter_no, sym=None, arg=None, aux=None):
        if (iter_no + 1) % period == 0:
            save_rnn_checkpoint(cells, prefix, iter_no + 1, sym, arg, aux)
    return _callback
