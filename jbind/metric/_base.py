"""EvalMetric, the metric registry, composite, loss and custom metrics (MXNet 1.9.1 `mxnet.metric`)."""
from __future__ import annotations

from collections import OrderedDict

import numpy

from .. import registry
from ..ndarray import NDArray


def _np(x) -> numpy.ndarray:
    """A read-only numpy view of a prediction or label (no copy for arrays in host memory)."""
    return numpy.asarray(x._data) if isinstance(x, NDArray) else numpy.asarray(x)


def on_host(x) -> bool:
    """Whether `x` lives in host memory, where numpy reads it without a copy."""
    data = x._data if isinstance(x, NDArray) else x
    try:
        return all(d.platform == "cpu" for d in data.devices())
    except AttributeError:
        return True


def check_label_shapes(labels, preds, wrap: bool = False, shape: bool = False):
    """Check that labels and preds have the same length (or shape); wrap single arrays in lists."""
    label_shape, pred_shape = (labels.shape, preds.shape) if shape else (len(labels), len(preds))
    if label_shape != pred_shape:
        raise ValueError(f"Shape of labels {label_shape} does not match shape of predictions {pred_shape}")
    if wrap:
        if isinstance(labels, (NDArray, numpy.ndarray)):
            labels = [labels]
        if isinstance(preds, (NDArray, numpy.ndarray)):
            preds = [preds]
    return labels, preds


class EvalMetric:
    """Base class: `name`, `num_inst`, `sum_metric`, and the names used by `update_dict`."""

    def __init__(self, name, output_names=None, label_names=None, **kwargs):
        self.name = str(name)
        self.output_names = output_names
        self.label_names = label_names
        self._has_global_stats = kwargs.pop("has_global_stats", False)
        self._kwargs = kwargs
        self.reset()

    def __str__(self):
        return f"EvalMetric: {dict(self.get_name_value())}"

    def get_config(self) -> dict:
        """The arguments that recreate this metric with `create(**config)`."""
        config = self._kwargs.copy()
        config.update({"metric": self.__class__.__name__, "name": self.name, "output_names": self.output_names,
                       "label_names": self.label_names})
        return config

    def update_dict(self, label: dict, pred: dict) -> None:
        """`update` with the arrays named by `label_names` / `output_names` (all if None)."""
        pred = [pred[n] for n in self.output_names] if self.output_names is not None else list(pred.values())
        label = [label[n] for n in self.label_names] if self.label_names is not None else list(label.values())
        self.update(label, pred)

    def update(self, labels, preds) -> None:
        raise NotImplementedError()

    def _add(self, value, count) -> None:
        self.sum_metric += value
        self.global_sum_metric += value
        self.num_inst += count
        self.global_num_inst += count

    def reset(self) -> None:
        self.num_inst = 0
        self.sum_metric = 0.0
        self.global_num_inst = 0
        self.global_sum_metric = 0.0

    def reset_local(self) -> None:
        self.num_inst = 0
        self.sum_metric = 0.0

    def get(self):
        if self.num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, self.sum_metric / self.num_inst)

    def get_global(self):
        if not self._has_global_stats:
            return self.get()
        if self.global_num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, self.global_sum_metric / self.global_num_inst)

    @staticmethod
    def _pairs(name, value):
        return list(zip(name if isinstance(name, list) else [name], value if isinstance(value, list) else [value]))

    def get_name_value(self) -> list:
        """[(name, value)] pairs."""
        return self._pairs(*self.get())

    def get_global_name_value(self) -> list:
        return self._pairs(*self.get_global()) if self._has_global_stats else self.get_name_value()


register = registry.get_register_func(EvalMetric, "metric")
alias = registry.get_alias_func(EvalMetric, "metric")
_create = registry.get_create_func(EvalMetric, "metric")


def create(metric, *args, **kwargs) -> EvalMetric:
    """A metric from a name, an instance, a list of those (composite) or a function (custom)."""
    if callable(metric):
        return CustomMetric(metric, *args, **kwargs)
    if isinstance(metric, list):
        composite = CompositeEvalMetric()
        for child in metric:
            composite.add(create(child, *args, **kwargs))
        return composite
    return _create(metric, *args, **kwargs)


@register
@alias("composite")
class CompositeEvalMetric(EvalMetric):
    """Several metrics updated together; `get()` returns lists of names and values."""

    def __init__(self, metrics=None, name="composite", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names, has_global_stats=True)
        self.metrics = [create(i) for i in (metrics or [])]

    def add(self, metric) -> None:
        self.metrics.append(create(metric))

    def get_metric(self, index: int):
        try:
            return self.metrics[index]
        except IndexError:
            return ValueError(f"Metric index {index} is out of range 0 and {len(self.metrics)}")

    def update_dict(self, labels, preds) -> None:
        if self.label_names is not None:
            labels = OrderedDict([i for i in labels.items() if i[0] in self.label_names])
        if self.output_names is not None:
            preds = OrderedDict([i for i in preds.items() if i[0] in self.output_names])
        for metric in self.metrics:
            metric.update_dict(labels, preds)

    def update(self, labels, preds) -> None:
        for metric in self.metrics:
            metric.update(labels, preds)

    def reset(self) -> None:
        for metric in getattr(self, "metrics", []):
            metric.reset()

    def reset_local(self) -> None:
        for metric in getattr(self, "metrics", []):
            metric.reset_local()

    def _collect(self, fn):
        names, values = [], []
        for metric in self.metrics:
            name, value = fn(metric)
            names.extend([name] if isinstance(name, str) else name)
            values.extend(value if isinstance(value, list) else [value])
        return (names, values)

    def get(self):
        return self._collect(lambda m: m.get())

    def get_global(self):
        return self._collect(lambda m: m.get_global())

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({"metrics": [i.get_config() for i in self.metrics]})
        return config


@register
class Loss(EvalMetric):
    """Mean of the outputs themselves (for MakeLoss heads); labels are ignored."""

    def __init__(self, name="loss", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names, has_global_stats=True)

    def update(self, _, preds) -> None:
        if isinstance(preds, (NDArray, numpy.ndarray)):
            preds = [preds]
        for pred in preds:
            pred = _np(pred)
            self._add(float(pred.sum()), pred.size)


@register
class Torch(Loss):
    """Dummy metric for torch criterions."""

    def __init__(self, name="torch", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)


@register
class Caffe(Loss):
    """Dummy metric for caffe criterions."""

    def __init__(self, name="caffe", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)


@register
class CustomMetric(EvalMetric):
    """A metric from `feval(label, pred)` on numpy arrays, returning a value or (sum, count)."""

    def __init__(self, feval, name=None, allow_extra_outputs=False, output_names=None, label_names=None):
        if name is None:
            name = feval.__name__
            if name.find("<") != -1:
                name = "custom(%s)" % name
        super().__init__(name, feval=feval, allow_extra_outputs=allow_extra_outputs, output_names=output_names,
                         label_names=label_names, has_global_stats=True)
        self._feval = feval
        self._allow_extra_outputs = allow_extra_outputs

    def update(self, labels, preds) -> None:
        if not self._allow_extra_outputs:
            labels, preds = check_label_shapes(labels, preds, True)
        for pred, label in zip(preds, labels):
            reval = self._feval(_np(label), _np(pred))
            if isinstance(reval, tuple):
                self._add(*reval)
            else:
                self._add(reval, 1)

    def get_config(self):
        raise NotImplementedError("CustomMetric cannot be serialized")


def np(numpy_feval, name=None, allow_extra_outputs=False) -> CustomMetric:  # noqa: F811  (MXNet's name)
    """A CustomMetric from a function of numpy (label, pred) returning a float."""
    def feval(label, pred):
        return numpy_feval(label, pred)
    feval.__name__ = numpy_feval.__name__
    return CustomMetric(feval, name, allow_extra_outputs)



def over_all_workers(metric: EvalMetric) -> EvalMetric:
    """A copy of `metric` whose sums and counts are those of every worker together
    (one collective). Exact for metrics kept as (sum, count), as MXNet's are; with one
    process, a plain copy."""
    import copy

    from .. import distributed
    out = copy.deepcopy(metric)
    leaves = list(getattr(out, "metrics", None) or [out])
    fields = ("sum_metric", "num_inst", "global_sum_metric", "global_num_inst")
    if distributed.is_distributed():
        values = numpy.array([float(getattr(m, f)) for m in leaves for f in fields], dtype=numpy.float32)
        summed = numpy.asarray(distributed.allreduce_sum([values])[0], dtype=numpy.float64)
        it = iter(summed)
        for m in leaves:
            for f in fields:
                v = next(it)
                setattr(m, f, int(round(v)) if f.endswith("num_inst") else float(v))
    return out
