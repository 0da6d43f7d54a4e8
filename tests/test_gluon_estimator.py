"""gluon.contrib.estimator.Estimator: the training loop, its defaults, its checks, and
BatchProcessor. Handlers are tested in test_gluon_estimator_handlers.py."""
import re
import warnings

import numpy as np
import pytest

import jbind as mx
from jbind import gluon
from jbind.gluon.contrib.estimator import (BatchBegin, BatchEnd, BatchProcessor, EpochBegin, EpochEnd, Estimator,
                                           GradientUpdateHandler, LoggingHandler, MetricHandler, StoppingHandler,
                                           TrainBegin, TrainEnd, ValidationHandler)


def _data(n=24, batch_size=8, seed=0):
    """Three separable classes in 4 features."""
    rng = np.random.RandomState(seed)
    y = np.arange(n) % 3
    x = rng.normal(0, 0.3, (n, 4)).astype(np.float32)
    x[np.arange(n), y] += 2.0
    return gluon.data.DataLoader(gluon.data.ArrayDataset(mx.nd.array(x), mx.nd.array(y)), batch_size=batch_size)


def _net(units=3):
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(gluon.nn.Dense(units))
    net.initialize(mx.init.Xavier())
    return net


def _est(net=None, loss=None, lr=0.5, **kwargs):
    net = net or _net()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": lr})
    return Estimator(net, loss or gluon.loss.SoftmaxCrossEntropyLoss(), trainer=trainer, **kwargs)


class Recorder(TrainBegin, TrainEnd, EpochBegin, EpochEnd, BatchBegin, BatchEnd):
    def __init__(self, priority=0):
        self.events, self.priority = [], priority

    def train_begin(self, estimator, *args, **kwargs):
        self.events.append("train_begin")

    def train_end(self, estimator, *args, **kwargs):
        self.events.append("train_end")

    def epoch_begin(self, estimator, *args, **kwargs):
        self.events.append("epoch_begin")

    def epoch_end(self, estimator, *args, **kwargs):
        self.events.append("epoch_end")

    def batch_begin(self, estimator, *args, **kwargs):
        self.events.append("batch_begin")

    def batch_end(self, estimator, *args, **kwargs):
        assert set(kwargs) == {"batch", "pred", "label", "loss"}
        self.events.append("batch_end")


def test_fit_lowers_the_loss_and_updates_the_metrics(capsys):
    data = _data()
    est = _est()
    est.evaluate(data)
    before = est.val_metrics[1].get()[1]
    est.fit(data, val_data=data, epochs=15)
    names = [m.name for m in est.train_metrics + est.val_metrics]
    assert names == ["training accuracy", "training softmaxcrossentropyloss", "validation accuracy",
                     "validation softmaxcrossentropyloss"]
    assert est.val_metrics[1].get()[1] < 0.5 * before
    assert est.train_metrics[0].get()[1] == 1.0 and est.val_metrics[0].get()[1] == 1.0
    assert est.train_metrics[0].num_inst == 24   # reset at each epoch begin
    assert "Train finished using total" in capsys.readouterr().out


def test_default_metrics_follow_the_loss():
    est = _est(loss=gluon.loss.L2Loss())
    assert [type(m) for m in est.train_metrics] == [mx.metric.Loss]
    assert est.train_metrics[0].name == "training l2loss" and est.val_metrics[0].name == "validation l2loss"
    assert est.val_metrics[0] is not est.train_metrics[0]
    acc = mx.metric.Accuracy()
    est = _est(train_metrics=acc, val_metrics=[mx.metric.Accuracy(name="v")])
    assert est.train_metrics == [acc] and acc.name == "training accuracy"
    assert [m.name for m in est.val_metrics] == ["validation v"]
    composite = mx.metric.CompositeEvalMetric([mx.metric.Accuracy(), mx.metric.MSE()])
    assert len(_est(train_metrics=composite).train_metrics) == 2


def test_handlers_are_called_in_event_order_and_stop_by_batches():
    rec = Recorder()
    est = _est()
    est.fit(_data(), event_handlers=[rec], epochs=2)
    one_epoch = ["epoch_begin"] + ["batch_begin", "batch_end"] * 3 + ["epoch_end"]
    assert rec.events == ["train_begin"] + one_epoch * 2 + ["train_end"]
    rec = Recorder()
    est.fit(_data(), event_handlers=rec, batches=5)   # the partial epoch still ends
    assert rec.events == ["train_begin"] + one_epoch + one_epoch[:5] + ["epoch_end", "train_end"]
    assert (est.max_epoch, est.max_batch) == (None, 5)


def test_handlers_run_in_priority_order():
    est = _est()
    seen = []

    class Probe(BatchEnd):
        def __init__(self):
            self.priority = -500

        def batch_end(self, estimator, *args, **kwargs):
            seen.append(est.train_metrics[0].num_inst)

    handlers = est._prepare_default_handlers(None, [Probe(), LoggingHandler(metrics=est.train_metrics)])
    kinds = [type(h) for h in handlers]
    assert kinds == [GradientUpdateHandler, MetricHandler, Probe, StoppingHandler, LoggingHandler]
    est.fit(_data(), event_handlers=[Probe()], epochs=1)
    assert seen == [8, 16, 24]   # MetricHandler (-1000) ran first
    with_val = est._prepare_default_handlers(_data(), None)
    assert sum(isinstance(h, ValidationHandler) for h in with_val) == 1
    mine = MetricHandler(metrics=est.train_metrics)
    assert [h for h in est._prepare_default_handlers(None, [mine]) if isinstance(h, MetricHandler)] == [mine]


def test_categorize_handlers_by_mixin():
    class A(TrainBegin):
        pass

    class B(EpochBegin, BatchBegin, TrainEnd):
        pass

    groups = _est()._categorize_handlers([A(), B(), Recorder()])
    assert [len(g) for g in groups] == [2, 2, 2, 1, 1, 2]


def test_evaluate_uses_val_net_and_val_loss():
    net = _net(units=1)
    val_net = _net(units=1)
    est = _est(net=net, val_net=val_net, val_loss=gluon.loss.L1Loss(), loss=gluon.loss.L2Loss())
    calls = []
    val_net.register_forward_hook(lambda block, inputs, output: calls.append(1))
    est.evaluate(_data(n=12, batch_size=4))
    assert len(calls) == 3 and est.val_metrics[0].num_inst == 12
    assert est.val_loss is not est.loss


def test_custom_batch_processor_is_used():
    class Counting(BatchProcessor):
        fits = evals = 0

        def fit_batch(self, estimator, train_batch, batch_axis=0):
            Counting.fits += 1
            return super().fit_batch(estimator, train_batch, batch_axis)

        def evaluate_batch(self, estimator, val_batch, batch_axis=0):
            Counting.evals += 1
            return super().evaluate_batch(estimator, val_batch, batch_axis)

    est = _est(batch_processor=Counting())
    est.fit(_data(), val_data=_data(n=16), epochs=2)
    assert (Counting.fits, Counting.evals) == (6, 4)
    with pytest.raises(ValueError, match="fit_batch\\(\\) and evaluate_batch\\(\\)"):
        _est(batch_processor=object())


def test_two_contexts_split_along_batch_axis():
    """Data laid out (features, batch) is split along axis 1 across cpu(0) and cpu(1)."""
    x = np.random.RandomState(1).normal(size=(16, 4)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[np.arange(16) % 3]

    class Columns(gluon.data.Dataset):
        def __getitem__(self, i):
            return x[i], y[i]

        def __len__(self):
            return 16

    def columns(samples):
        return tuple(mx.nd.array(np.stack([s[k] for s in samples], 1)) for k in (0, 1))

    data = gluon.data.DataLoader(Columns(), batch_size=8, batchify_fn=columns)
    ctx = [mx.cpu(0), mx.cpu(1)]
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.HybridLambda(lambda F, v: F.transpose(v)), gluon.nn.Dense(3, in_units=4))
    net.initialize(ctx=ctx)
    sizes = []

    class Steps(BatchEnd):
        def batch_end(self, estimator, *args, **kwargs):
            sizes.append([(l.shape, l.context) for l in kwargs["loss"]])

    est = Estimator(net, gluon.loss.L2Loss(), context=ctx, train_metrics=mx.metric.Loss(),
                    trainer=gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01}))
    est.fit(data, epochs=1, batch_axis=1, event_handlers=[Steps()])
    assert sizes == [[((4,), mx.cpu(0)), ((4,), mx.cpu(1))]] * 2


def test_warnings_of_the_defaults():
    net = gluon.nn.Dense(2)
    with pytest.warns(UserWarning, match="No trainer specified, default SGD optimizer with learning rate 0.001"):
        est = Estimator(net, gluon.loss.L2Loss(), initializer=mx.init.One())
    assert est.trainer.learning_rate == 0.001 and est.context == [mx.cpu()]
    est.fit(gluon.data.DataLoader(gluon.data.ArrayDataset(mx.nd.ones((4, 3)), mx.nd.ones((4, 2))), batch_size=4),
            epochs=1)
    net2 = gluon.nn.Dense(2, in_units=3)
    net2.initialize(mx.init.One())
    with pytest.warns(UserWarning, match="Network already fully initialized, skipping initialization"):
        _est(net=net2, initializer=mx.init.Zero())
    assert (net2.weight.data().asnumpy() == 1).all()


@pytest.mark.parametrize("kwargs, match", [
    ({"loss": "mse"}, "loss must be a Loss"),
    ({"train_metrics": "acc"}, "metrics must be a Metric or a list of Metric"),
    ({"val_metrics": [mx.metric.Accuracy(), 3]}, "metrics must be a Metric or a list of Metric"),
    ({"trainer": "sgd"}, "Trainer must be a Gluon Trainer instance"),
    ({"context": "cpu"}, "context must be a Context or a list of Context"),
])
def test_bad_arguments_are_value_errors(kwargs, match):
    net = _net()
    args = {"loss": gluon.loss.L2Loss(), "trainer": gluon.Trainer(net.collect_params(), "sgd"), **kwargs}
    with pytest.raises(ValueError, match=match) as info:
        Estimator(net, **args)
    assert isinstance(info.value, mx.base.MXNetError)


def test_unavailable_gpu_is_an_assertion_error():
    with pytest.raises(AssertionError, match=re.escape("gpu(100) is not available")):
        _est(context=[mx.cpu(), mx.gpu(100)])


def test_fit_arguments_are_checked():
    est = _est()
    x, y = mx.nd.ones((8, 4)), mx.nd.zeros((8,))
    with pytest.raises(ValueError, match="Estimator only support input as Gluon DataLoader"):
        est.fit(mx.io.NDArrayIter(x, y, batch_size=4), epochs=1)
    with pytest.raises(ValueError, match="Estimator only support input as Gluon DataLoader"):
        est.fit(_data(), val_data=[x], epochs=1)
    with pytest.raises(ValueError, match="Estimator only support input as Gluon DataLoader"):
        est.evaluate([x])
    for kwargs in ({}, {"epochs": 1, "batches": 2}):
        with pytest.raises(ValueError, match="Please specify one and only one of: epochs or batches"):
            est.fit(_data(), **kwargs)
    for kwargs in ({"epochs": -1}, {"batches": 1.5}):
        with pytest.raises(ValueError, match="must be a positive integer"):
            est.fit(_data(), **kwargs)
    with pytest.raises(ValueError, match="handlers must be an EventHandler or a list of EventHandler"):
        est.fit(_data(), epochs=1, event_handlers=[print])
    empty = gluon.data.DataLoader(gluon.data.SimpleDataset([]), batch_size=4)
    with pytest.raises(ValueError, match="train_data gave no batch"):
        est.fit(empty, batches=3)


def test_handler_with_a_foreign_metric_is_refused():
    est = _est()
    stranger = mx.metric.Accuracy(name="val acc")
    with pytest.raises(ValueError, match="Event handler LoggingHandler refers to a metric instance"):
        est.fit(_data(), epochs=1, event_handlers=[LoggingHandler(metrics=[stranger])])
    with pytest.raises(ValueError, match="outside of the known training and validation metrics"):
        est.evaluate(_data(), event_handlers=[LoggingHandler(metrics=est.train_metrics)])
    with warnings.catch_warnings():   # every handler of one's own (no defaults added): not checked
        handlers = [MetricHandler([stranger]), LoggingHandler(metrics=[stranger])]
        est.evaluate(_data(), event_handlers=handlers)
    assert stranger.num_inst == 24


def test_logger_writes_to_stdout_of_construction(capsys):
    est = _est()
    est.fit(_data(), epochs=1)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Training begin: using optimizer SGD with current learning rate 0.5000 "
    assert out[1:3] == ["Train for 1 epochs.", "[Epoch 0] Begin, current learning rate: 0.5000"]
    assert re.fullmatch(r"\[Epoch 0\] Finished in \d+\.\d{3}s, training accuracy: \d\.\d{4}, "
                        r"training softmaxcrossentropyloss: \d\.\d{4}", out[3])
    assert re.fullmatch(r"Train finished using total \d+s with 1 epochs\. training accuracy: .*", out[4])
    est.evaluate(_data())
    assert capsys.readouterr().out.splitlines()[0] == "Validation Begin"


def test_star_imports_give_mxnets_names():
    scope = {}
    exec("from jbind.gluon.contrib.estimator import *", scope)
    handlers = {"TrainBegin", "TrainEnd", "EpochBegin", "EpochEnd", "BatchBegin", "BatchEnd", "StoppingHandler",
                "MetricHandler", "ValidationHandler", "LoggingHandler", "CheckpointHandler", "EarlyStoppingHandler",
                "GradientUpdateHandler"}
    assert set(scope) - {"__builtins__"} == handlers | {"Estimator", "BatchProcessor", "estimator", "event_handler",
                                                        "batch_processor", "utils"}
    scope = {}
    exec("from jbind.gluon.contrib.estimator.event_handler import *", scope)
    assert set(scope) - {"__builtins__"} == handlers
    assert mx.gluon.contrib.estimator.Estimator is Estimator
