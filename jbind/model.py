"""`mx.model`: checkpoints as MXNet 1.x writes them, and the legacy `FeedForward` API.

A checkpoint is `prefix-symbol.json` (the symbol) and `prefix-%04d.params` (an NDArray
file whose names are `arg:<name>` and `aux:<name>`). Both files are written atomically.
"""
from __future__ import annotations

import logging
from typing import Optional

from . import ndarray as nd
from .base import MXNetError
from .context import cpu
from .symbol import Symbol
from .symbol.json_io import load as _load_symbol

_log = logging.getLogger(__name__)


def save_checkpoint(prefix: str, epoch: int, symbol: Optional[Symbol], arg_params: dict,
                    aux_params: dict, remove_amp_cast: bool = True) -> None:
    """Write `prefix-symbol.json` (unless `symbol` is None) and `prefix-%04d.params`.

    Args:
        prefix: path prefix of both files.
        epoch: the epoch number, written as four digits.
        symbol: the network.
        arg_params: name -> NDArray of the network's weights.
        aux_params: name -> NDArray of its auxiliary states.
        remove_amp_cast: write the symbol without the AMP casts feeding other nodes (MXNet's default).
    """
    if symbol is not None:
        symbol.save(f"{prefix}-symbol.json", remove_amp_cast=remove_amp_cast)
    save_dict = {f"arg:{k}": v.as_in_context(cpu()) for k, v in arg_params.items()}
    save_dict.update({f"aux:{k}": v.as_in_context(cpu()) for k, v in aux_params.items()})
    param_name = "%s-%04d.params" % (prefix, epoch)
    nd.save(param_name, save_dict)
    _log.info('Saved checkpoint to "%s"', param_name)


def load_params(prefix: str, epoch: int) -> tuple[dict, dict]:
    """Read `prefix-%04d.params` into (arg_params, aux_params).

    Names without an `arg:` or `aux:` prefix are skipped, as in MXNet. A file saved
    without names, or a name without a `:`, raises `MXNetError` (MXNet fails with an
    AttributeError / ValueError there).
    """
    fname = "%s-%04d.params" % (prefix, epoch)
    save_dict = nd.load(fname, any_layout=True)
    arg_params: dict = {}
    aux_params: dict = {}
    if not save_dict:
        _log.warning("Params file '%s' is empty", fname)
        return arg_params, aux_params
    if not isinstance(save_dict, dict):
        raise MXNetError(f"params file {fname!r} holds {len(save_dict)} arrays without names; "
                         "a checkpoint needs 'arg:<name>' / 'aux:<name>' names")
    for k, v in save_dict.items():
        tp, sep, name = k.partition(":")
        if not sep:
            raise MXNetError(f"params file {fname!r}: name {k!r} has no 'arg:' or 'aux:' prefix")
        if tp == "arg":
            arg_params[name] = v
        elif tp == "aux":
            aux_params[name] = v
    return arg_params, aux_params


def load_checkpoint(prefix: str, epoch: int) -> tuple[Symbol, dict, dict]:
    """Read a checkpoint: (symbol, arg_params, aux_params), as `mx.model.load_checkpoint`."""
    symbol = _load_symbol(f"{prefix}-symbol.json")
    arg_params, aux_params = load_params(prefix, epoch)
    return symbol, arg_params, aux_params


from ._feedforward import BatchEndParam, FeedForward  # noqa: E402  (it uses the functions above)

__all__ = ["BatchEndParam", "FeedForward", "load_checkpoint", "load_params", "save_checkpoint"]
