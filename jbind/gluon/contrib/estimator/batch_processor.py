"""BatchProcessor: what the Estimator does with one batch, as
`mxnet.gluon.contrib.estimator.batch_processor` (1.9.1). Subclass it and override
`fit_batch` / `evaluate_batch` to change a training or validation step."""
from __future__ import annotations

from .... import autograd
from ...utils import split_and_load

__all__ = ["BatchProcessor"]


class BatchProcessor:
    """The default training and validation step on a batch `(data, label)`."""

    def _get_data_and_label(self, batch, ctx, batch_axis=0):
        """`batch[0]` and `batch[1]`, each split along `batch_axis` across the contexts `ctx`."""
        data = split_and_load(batch[0], ctx_list=ctx, batch_axis=batch_axis)
        label = split_and_load(batch[1], ctx_list=ctx, batch_axis=batch_axis)
        return data, label

    def evaluate_batch(self, estimator, val_batch, batch_axis=0):
        """`estimator.val_net` and `estimator.val_loss` on a validation batch.

        Returns:
            (data, label, pred, loss): lists with one NDArray per context.
        """
        data, label = self._get_data_and_label(val_batch, estimator.context, batch_axis)
        pred = [estimator.val_net(x) for x in data]
        loss = [estimator.val_loss(y_hat, y) for y_hat, y in zip(pred, label)]
        return data, label, pred, loss

    def fit_batch(self, estimator, train_batch, batch_axis=0):
        """Forward `estimator.net` and `estimator.loss` under `autograd.record()`, then backward
        (the parameters are updated later, by GradientUpdateHandler).

        Returns:
            (data, label, pred, loss): lists with one NDArray per context.
        """
        data, label = self._get_data_and_label(train_batch, estimator.context, batch_axis)
        with autograd.record():
            pred = [estimator.net(x) for x in data]
            loss = [estimator.loss(y_hat, y) for y_hat, y in zip(pred, label)]
        for l in loss:
            l.backward()
        return data, label, pred, loss
