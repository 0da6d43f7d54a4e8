"""Evaluation metrics, as `mxnet.metric` (MXNet 1.9.1).

`update(labels, preds)` takes lists of NDArrays (numpy arrays work too; a single array is
wrapped in a list) and accumulates `sum_metric` / `num_inst` on the host; `get()` returns
`(name, sum_metric / num_inst)`, or NaN before any update. The `global_*` counters
survive `reset_local()`, as in MXNet.
"""
from ._base import (Caffe, CompositeEvalMetric, CustomMetric, EvalMetric, Loss, Torch, alias, check_label_shapes,
                    create, np, register)
from ._classification import (F1, MCC, PCC, Accuracy, CrossEntropy, NegativeLogLikelihood, Perplexity,
                              TopKAccuracy)
from ._regression import MAE, MSE, RMSE, PearsonCorrelation

__all__ = ["Accuracy", "Caffe", "CompositeEvalMetric", "CrossEntropy", "CustomMetric", "EvalMetric", "F1", "Loss",
           "MAE", "MCC", "MSE", "PCC", "NegativeLogLikelihood", "PearsonCorrelation", "Perplexity", "RMSE", "Torch",
           "TopKAccuracy", "alias", "check_label_shapes", "create", "np", "register"]
