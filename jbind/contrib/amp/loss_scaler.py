"""The dynamic loss scale of AMP (MXNet's `mxnet.contrib.amp.loss_scaler.LossScaler`)."""
from __future__ import annotations

import logging

import numpy as np


def _first_grads(params) -> list:
    """The gradient on the first context of each parameter that has one (MXNet checks
    only those)."""
    out = []
    for p in params:
        grads = getattr(p, "_grad", None)
        if grads is None and getattr(p, "grad_req", "null") != "null" and hasattr(p, "list_grad"):
            grads = p.list_grad()
        if grads:
            out.append(grads[0])
    return out


class LossScaler:
    """Dynamic loss scaler for AMP.

    The scale starts at 2**16. `has_overflow(params)` checks the gradients: after an
    overflow the scale is halved, after 2000 steps in a row without one it is doubled (at
    most 2**24). As MXNet's, a new scale takes effect at the following `has_overflow`
    call: `loss_scale` is the scale the current step's loss was multiplied by.
    """

    def __init__(self):
        self._loss_scale = 2.0 ** 16
        self._next_loss_scale = self._loss_scale
        self._max_loss_scale = 2.0 ** 24
        self._scale_seq_len = 2000
        self._unskipped = 0

    @property
    def loss_scale(self) -> float:
        """The current loss scale."""
        return self._loss_scale

    def has_overflow(self, params) -> bool:
        """Whether any gradient of `params` (Gluon Parameters) holds an inf or NaN; then
        the step should be skipped. Updates the scale as the class docstring says."""
        grads = _first_grads(params)
        finite = all(np.isfinite(np.asarray(g.asnumpy() if hasattr(g, "asnumpy") else g, np.float32)).all()
                     for g in grads)
        overflow = not finite
        self._loss_scale = self._next_loss_scale
        if overflow:
            self._next_loss_scale = self._loss_scale / 2.0
            self._unskipped = 0
            logging.info("AMP: decreasing loss scale to %f", self._next_loss_scale)
        else:
            self._unskipped += 1
        if self._unskipped == self._scale_seq_len:
            self._unskipped = 0
            self._next_loss_scale = min(self._max_loss_scale, self._loss_scale * 2.0)
            logging.info("AMP: increasing loss scale to %f", self._next_loss_scale)
        return overflow
