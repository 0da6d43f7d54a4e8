"""How a Trainer picks its kvstore and whether the weights are updated on it (MXNet 1.9's rules).

Three cases, decided on the first `step` (or the first `row_sparse_data`):

- a row_sparse weight: the kvstore holds the weight and updates it (always a kvstore,
  even on one context; update_on_kvstore=False is refused);
- a row_sparse gradient with dense weights: a kvstore only with several contexts, and
  the Trainer updates the weights (unless update_on_kvstore=True is asked for);
- dense weights and gradients: a kvstore only with several contexts; updated on it
  when MXNET_UPDATE_ON_KVSTORE (default 1) says so and the store can hold an optimizer,
  except a 'local' store with a parameter over 16M entries.
"""
from __future__ import annotations

import os

import numpy as np

from .. import kvstore as _kv
from .._kvstore_base import KVStoreBase
from ..base import MXNetError

__all__ = ["decide_kvstore", "check_kvstore_arg"]

_BUILTIN = ("device", "local", "nccl")
_BIG_PARAM = 1024 * 1024 * 16


def check_kvstore_arg(kvstore) -> None:
    """Refuse, when the Trainer is made, a kvstore argument jbind's Trainer cannot use."""
    if kvstore in (None, False) or isinstance(kvstore, KVStoreBase):
        return
    if isinstance(kvstore, str) and (kvstore.lower() in _BUILTIN or kvstore.lower() in KVStoreBase.kv_registry):
        return
    raise MXNetError(f"Trainer: kvstore {kvstore!r} is not supported by jbind's Trainer (use 'device', 'local', "
                     f"None, a KVStore object or a registered KVStoreBase name: {sorted(KVStoreBase.kv_registry)})")


def _env_update_on_kvstore() -> bool:
    return bool(int(os.getenv("MXNET_UPDATE_ON_KVSTORE", "1")))


def _create(kvstore, num_device, params):
    """MXNet's `_create_kvstore`: (store or None, update_on_kvstore)."""
    update = _env_update_on_kvstore()
    if kvstore in (None, False):
        kv = None
    elif isinstance(kvstore, KVStoreBase):
        kv = kvstore
    elif num_device == 1:
        kv = None   # one device in one process: nothing to reduce
    else:
        kv = _kv.create(kvstore)
        if kvstore == "local" and max(int(np.prod(p.shape)) for p in params) > _BIG_PARAM:
            update = False
    if kv is None:
        return None, False
    return kv, update and kv.is_capable(KVStoreBase.OPTIMIZER)


def decide_kvstore(kvstore, asked_update, num_device, params):
    """(store or None, update_on_kvstore or None) for `params` on `num_device` contexts, given
    the Trainer's `kvstore` argument and its `update_on_kvstore` (None: let the rules decide).

    Raises:
        MXNetError: no store can serve row_sparse weights.
        ValueError: update_on_kvstore was asked for and the case refuses it.
    """
    sparse_weight = any(p._stype != "default" for p in params)
    sparse_grad = any(p._grad_stype != "default" for p in params)
    if sparse_weight:
        if isinstance(kvstore, KVStoreBase):
            kv = kvstore
        elif isinstance(kvstore, str):
            kv = _kv.create(kvstore)
        else:
            raise MXNetError(f"Cannot create '{kvstore}' KVStore with row_sparse parameters. The type must be "
                             "KVStore or str.")
        if not kv.is_capable(KVStoreBase.OPTIMIZER):
            raise MXNetError(f"KVStore with sparse weight requires optimizer support. However, {type(kv).__name__} "
                             "does not support optimizer.")
        if asked_update is False:
            raise ValueError("Cannot set update_on_kvstore=False when sparse weights are present.")
        return kv, True
    kv, update = _create(kvstore, num_device, params)
    if sparse_grad:
        update = False if asked_update is None else asked_update
        if kv is not None and not isinstance(kv, _kv.KVStore):
            raise ValueError(f"Cannot use {type(kv)} for multi-device training with sparse gradients")
    else:
        if asked_update is not None:
            update = asked_update
        if update and kv is not None and not kv.is_capable(KVStoreBase.OPTIMIZER):
            if asked_update:
                raise ValueError(f"Please set update_on_kvstore=False when training with {type(kv)}")
            update = False
    return (kv, bool(update)) if kv is not None else (None, None)
