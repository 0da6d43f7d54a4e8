"""gluon.contrib.estimator's event handlers: stopping, metrics, validation, logging,
checkpoints (saving, keeping, resuming), early stopping and the gradient update."""
import logging
import os
import re
import types

import numpy as np
import pytest

import jbind as mx
from jbind import gluon
from jbind.gluon.contrib.estimator import (CheckpointHandler, EarlyStoppingHandler, Estimator, GradientUpdateHandler,
                                           LoggingHandler, MetricHandler, StoppingHandler, ValidationHandler)


def _data(n=24, batch_size=8):
    rng = np.random.RandomState(0)
    y = np.arange(n) % 3
    x = rng.normal(0, 0.3, (n, 4)).astype(np.float32)
    x[np.arange(n), y] += 2.0
    return gluon.data.DataLoader(gluon.data.ArrayDataset(mx.nd.array(x), mx.nd.array(y)), batch_size=batch_size)


def _est(hybridize=True, lr=0.5, **kwargs):
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(gluon.nn.Dense(3, in_units=4))
    net.initialize(mx.init.Xavier())
    if hybridize:
        net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": lr})
    return Estimator(net, gluon.loss.SoftmaxCrossEntropyLoss(), trainer=trainer, **kwargs)


def _fake_estimator(**kwargs):
    logger = logging.Logger("test")
    return types.SimpleNamespace(**{"max_epoch": None, "max_batch": None, "batch_axis": 0, "logger": logger, **kwargs})


class Scripted(mx.metric.EvalMetric):
    """A metric whose value is set by the test."""

    def __init__(self, name="loss"):
        super().__init__(name)
        self.value = float("nan")

    def get(self):
        return self.name, self.value


def test_stopping_handler_counts_batches_and_epochs():
    h = StoppingHandler()
    h.train_begin(_fake_estimator(max_batch=3))
    assert [h.batch_end(None) for _ in range(3)] == [False, False, True]
    h = StoppingHandler()
    h.train_begin(_fake_estimator(max_epoch=2))
    assert [h.batch_end(None) for _ in range(5)] == [False] * 5
    assert [h.epoch_end(None), h.epoch_end(None)] == [False, True]


def test_metric_handler_feeds_losses_to_loss_metrics():
    acc, lm = mx.metric.Accuracy(), mx.metric.Loss()
    h = MetricHandler([acc, lm])
    assert h.priority == -1000
    pred, label, loss = [mx.nd.array([[0.1, 0.9], [0.8, 0.2]])], [mx.nd.array([1, 1])], [mx.nd.array([3.0, 5.0])]
    h.batch_end(None, pred=pred, label=label, loss=loss)
    assert acc.get()[1] == 0.5 and lm.get()[1] == 4.0
    h.epoch_begin(None)
    assert acc.num_inst == 0 and lm.num_inst == 0


def test_validation_handler_periods():
    calls = []
    est = _fake_estimator(batch_axis=1)
    h = ValidationHandler("VAL", lambda **kw: calls.append(kw), epoch_period=2, batch_period=3, event_handlers="H")
    h.train_begin(est)
    for _ in range(7):
        h.batch_end(est)
    for _ in range(4):
        h.epoch_end(est)
    assert len(calls) == 2 + 2 and calls[0] == {"val_data": "VAL", "batch_axis": 1, "event_handlers": "H"}
    h.train_begin(est)
    assert (h.current_batch, h.current_epoch) == (0, 0)


def test_validation_every_n_epochs_in_fit():
    est = _est()
    runs = []
    evaluate = est.evaluate
    est.evaluate = lambda **kw: (runs.append(1), evaluate(**kw))
    h = ValidationHandler(_data(n=8), est.evaluate, epoch_period=2)
    est.fit(_data(), event_handlers=[h], epochs=5)
    assert len(runs) == 2 and est.val_metrics[0].num_inst == 8


def test_logging_handler_every_n_batches(capsys):
    est = _est(train_metrics=mx.metric.Accuracy())
    est.fit(_data(n=40), epochs=2, event_handlers=[LoggingHandler(log_interval=2, metrics=est.train_metrics)])
    lines = capsys.readouterr().out.splitlines()
    batch_lines = [l for l in lines if l.startswith("[Epoch") and "[Batch" in l]
    pattern = r"\[Epoch (\d)\]\[Batch (\d)\]\[Samples (\d+)\] time/interval: \d+\.\d{3}s training accuracy: \d\.\d{4}"
    found = [re.fullmatch(pattern, l).groups() for l in batch_lines]
    assert found == [("0", "0", "8"), ("0", "2", "24"), ("0", "4", "40"),
                     ("1", "0", "48"), ("1", "2", "64"), ("1", "4", "80")]
    est.fit(_data(), epochs=1, event_handlers=[LoggingHandler(metrics=est.train_metrics)])
    assert not [l for l in capsys.readouterr().out.splitlines() if "[Batch" in l]
    for bad in ("batch", 0, 1.5):
        with pytest.raises(ValueError, match="log_interval must be either an integer or string 'epoch'"):
            LoggingHandler(log_interval=bad)


def test_logging_handler_counts_and_file_output(tmp_path):
    est = _est()
    path = tmp_path / "log.txt"
    est.logger.addHandler(logging.FileHandler(path))
    h = LoggingHandler(metrics=est.train_metrics)
    est.fit(_data(), epochs=3, event_handlers=[h])
    assert (h.batch_index, h.current_epoch) == (0, 3)
    text = path.read_text()
    assert text.count("Begin, current learning rate: 0.5000") == 3 and "Train for 3 epochs." in text
    est.fit(_data(), batches=2, event_handlers=[h])
    assert "Train for 2 batches." in path.read_text()
    for handler in est.logger.handlers[1:]:
        handler.close()


def test_gradient_update_steps_by_the_summed_batch():
    steps = []
    est = _fake_estimator(trainer=types.SimpleNamespace(step=steps.append))
    h = GradientUpdateHandler()
    h.batch_end(est, loss=[mx.nd.ones((3,)), mx.nd.ones((5,))])
    h.batch_end(est, loss=mx.nd.ones((4, 2)))
    assert steps == [8, 4] and h.priority == -2000


def test_gradient_update_handler_of_ones_own_replaces_the_default():
    class Frozen(GradientUpdateHandler):
        def batch_end(self, estimator, *args, **kwargs):
            pass

    est = _est()
    before = est.net[0].weight.data().asnumpy()
    est.fit(_data(), epochs=1, event_handlers=[Frozen()])
    assert (est.net[0].weight.data().asnumpy() == before).all()
    est.fit(_data(), epochs=1)
    assert (est.net[0].weight.data().asnumpy() != before).any()


# --- CheckpointHandler ------------------------------------------------------------------------
def test_checkpoint_every_epoch_with_best_and_symbol(tmp_path):
    est = _est()
    loss_metric = est.train_metrics[1]
    with pytest.warns(UserWarning, match="`less` operator will be used to determine if training softmax"):
        h = CheckpointHandler(str(tmp_path), model_prefix="m", monitor=loss_metric, save_best=True)
    est.fit(_data(), epochs=2, event_handlers=[h])
    assert (h.current_epoch, h.current_batch) == (2, 6)
    assert sorted(os.listdir(tmp_path)) == ["m-best.params", "m-best.states", "m-epoch0batch3.params",
                                            "m-epoch0batch3.states", "m-epoch1batch6.params", "m-epoch1batch6.states",
                                            "m-symbol.json"]
    assert h.best == loss_metric.get()[1]   # the loss fell: the last epoch is the best
    sym = mx.sym.load(str(tmp_path / "m-symbol.json"))
    assert sym.list_arguments()[0] == "data"
    saved = mx.nd.load(str(tmp_path / "m-epoch1batch6.params"))
    assert set(saved) == {"0.weight", "0.bias"}
    np.testing.assert_array_equal(saved["0.weight"].asnumpy(), est.net[0].weight.data().asnumpy())
    np.testing.assert_array_equal(mx.nd.load(str(tmp_path / "m-best.params"))["0.bias"].asnumpy(),
                                  saved["0.bias"].asnumpy())
    est.trainer.load_states(str(tmp_path / "m-best.states"))


def test_checkpoint_by_batches_keeps_the_newest(tmp_path):
    decoy = tmp_path / "m-epoch0batch10.params"   # starts with an old checkpoint's name
    decoy.write_bytes(b"")
    est = _est(hybridize=False)
    h = CheckpointHandler(str(tmp_path), model_prefix="m", epoch_period=None, batch_period=2, max_checkpoints=2,
                          verbose=1)
    est.fit(_data(), batches=10, event_handlers=[h])
    assert (h.current_batch, h.current_epoch) == (10, 4)
    assert sorted(os.listdir(tmp_path)) == ["m-epoch0batch10.params", "m-epoch2batch7.params",
                                            "m-epoch2batch7.states", "m-epoch3batch9.params", "m-epoch3batch9.states"]
    assert h.saved_checkpoints == ["m-epoch2batch7", "m-epoch3batch9"]


def test_checkpoint_log_messages(tmp_path, capsys):
    est = _est(hybridize=False)
    h = CheckpointHandler(str(tmp_path), monitor=est.train_metrics[0], save_best=True, mode="max", verbose=1)
    est.fit(_data(), epochs=1, event_handlers=[h])
    out = capsys.readouterr().out
    assert "Model architecture(symbol file) is not saved, please use HybridBlock" in out
    assert "[Epoch 0] CheckpointHandler: trained total 4 batches, saving model at %s with prefix: " \
           "model-epoch0batch3" % tmp_path in out
    assert re.search(r"training accuracy improved from -inf to \d\.\d{5}, updating best model", out)


def test_checkpoint_arguments(tmp_path):
    with pytest.raises(ValueError, match="To save best model only, please provide one of the metric objects"):
        CheckpointHandler(str(tmp_path / "unused"), save_best=True)
    assert not (tmp_path / "unused").exists()
    with pytest.warns(RuntimeWarning, match="ModelCheckpoint mode middle is unknown, fallback to auto mode"):
        with pytest.warns(UserWarning, match="`greater` operator"):
            h = CheckpointHandler(str(tmp_path / "a" / "b"), monitor=mx.metric.Accuracy(), save_best=True,
                                  mode="middle")
    assert h.monitor_op is np.greater and (tmp_path / "a" / "b").is_dir()


def test_checkpoint_save_best_skips_a_metric_never_updated(tmp_path):
    est = _est()
    h = CheckpointHandler(str(tmp_path), monitor=est.val_metrics[0], save_best=True, mode="max")
    with pytest.warns(RuntimeWarning, match="Skipping save best because validation accuracy is not updated"):
        est.fit(_data(), epochs=1, event_handlers=[h])
    assert not (tmp_path / "model-best.params").exists()


def test_resume_from_checkpoint(tmp_path):
    est = _est()
    est.fit(_data(), epochs=2, event_handlers=[CheckpointHandler(str(tmp_path), max_checkpoints=1)])
    assert sorted(os.listdir(tmp_path)) == ["model-epoch1batch6.params", "model-epoch1batch6.states",
                                            "model-symbol.json"]
    trained = est.net[0].weight.data().asnumpy()
    fresh = _est()
    assert not np.allclose(fresh.net[0].weight.data().asnumpy(), trained)
    h = CheckpointHandler(str(tmp_path), max_checkpoints=1, resume_from_checkpoint=True)
    fresh.max_epoch, fresh.max_batch = 5, None
    h.train_begin(fresh)
    np.testing.assert_array_equal(fresh.net[0].weight.data().asnumpy(), trained)
    assert fresh.max_epoch == 3 and (h.trained_epoch, h.trained_batch) == (1, 6)
    fresh.fit(_data(), epochs=5, event_handlers=[h])
    assert fresh.max_epoch == 3
    assert sorted(os.listdir(tmp_path)) == ["model-epoch1batch6.params", "model-epoch1batch6.states",
                                            "model-epoch4batch15.params", "model-epoch4batch15.states",
                                            "model-symbol.json"]


def test_a_save_cut_short_leaves_no_params_to_resume_from(tmp_path):
    est = _est()
    est.fit(_data(), epochs=1, event_handlers=[CheckpointHandler(str(tmp_path))])
    saved = est.net[0].weight.data().asnumpy()

    def killed(fname):
        raise KeyboardInterrupt

    est.trainer.save_states = killed
    with pytest.raises(KeyboardInterrupt):
        est.fit(_data(), epochs=3, event_handlers=[CheckpointHandler(str(tmp_path), resume_from_checkpoint=True)])
    assert sorted(os.listdir(tmp_path)) == ["model-epoch0batch3.params", "model-epoch0batch3.states",
                                            "model-symbol.json"]   # nothing of epoch 1, no temp file
    fresh = _est()
    h = CheckpointHandler(str(tmp_path), resume_from_checkpoint=True)
    fresh.max_epoch, fresh.max_batch = 3, None
    h.train_begin(fresh)
    assert (h.trained_epoch, h.trained_batch) == (0, 3)
    np.testing.assert_array_equal(fresh.net[0].weight.data().asnumpy(), saved)


def test_resume_by_batches(tmp_path, capsys):
    est = _est()
    h = CheckpointHandler(str(tmp_path), epoch_period=None, batch_period=2, resume_from_checkpoint=True)
    est.fit(_data(), batches=4, event_handlers=[h])   # nothing to resume yet
    assert "CheckpointHandler: No checkpoint found, training from scratch for 4 batches" in capsys.readouterr().out
    assert {"model-epoch0batch1.params", "model-epoch1batch3.params"} <= set(os.listdir(tmp_path))
    est.fit(_data(), batches=8, event_handlers=[h])
    assert "Checkpoint resumed from epoch 1 batch 3, continue to train for 4 batches" in capsys.readouterr().out
    assert est.max_batch == 4 and "model-epoch3batch7.params" in os.listdir(tmp_path)


def test_resume_errors(tmp_path):
    est = _est()
    est.fit(_data(), epochs=2, event_handlers=[CheckpointHandler(str(tmp_path))])
    with pytest.raises(ValueError, match="Found checkpoint with maximum number of epoch 2 reached"):
        est.fit(_data(), epochs=2, event_handlers=[CheckpointHandler(str(tmp_path), resume_from_checkpoint=True)])
    with pytest.raises(AssertionError, match="you must only specify the same type of period"):
        est.fit(_data(), batches=20,
                event_handlers=[CheckpointHandler(str(tmp_path), batch_period=2, resume_from_checkpoint=True)])
    (tmp_path / "model-epochXbatch1.params").write_bytes(b"")
    with pytest.raises(ValueError, match="Error parsing checkpoint file 'model-epochXbatch1.params'"):
        est.fit(_data(), epochs=4, event_handlers=[CheckpointHandler(str(tmp_path), resume_from_checkpoint=True)])
    os.remove(tmp_path / "model-epochXbatch1.params")
    os.remove(tmp_path / "model-epoch1batch6.states")
    with pytest.raises(AssertionError, match="Failed to load checkpoint, .*model-epoch1batch6.states does not exist"):
        est.fit(_data(), epochs=4, event_handlers=[CheckpointHandler(str(tmp_path), resume_from_checkpoint=True)])


# --- EarlyStoppingHandler ---------------------------------------------------------------------
def _run_early_stopping(handler, values):
    est = _fake_estimator()
    handler.train_begin(est)
    for epoch, value in enumerate(values):
        handler.monitor.value = value
        if handler.epoch_end(est):
            return epoch
    return None


def test_early_stopping_patience_min_delta_and_baseline():
    with pytest.warns(UserWarning, match="`less` operator"):
        h = EarlyStoppingHandler(Scripted("loss"), patience=2)
    assert _run_early_stopping(h, [5, 4, 4.5, 3, 3.5, 3.2, 1]) == 5 and h.stopped_epoch == 5
    h = EarlyStoppingHandler(Scripted(), patience=1, min_delta=0.5, mode="min")
    assert _run_early_stopping(h, [5, 4, 3.8]) == 2
    h = EarlyStoppingHandler(Scripted("acc"), patience=1, mode="max", baseline=0.9)
    assert _run_early_stopping(h, [0.8]) == 0 and h.best == 0.9
    with pytest.warns(UserWarning, match="`greater` operator will be used to determine if f1 has improved"):
        h = EarlyStoppingHandler(Scripted("f1"), patience=0)
    assert _run_early_stopping(h, [0.1, 0.2, 0.3, 0.3]) == 3


def test_early_stopping_in_fit(capsys):
    est = _est(lr=0.0)   # nothing changes: the accuracy never improves after epoch 0
    h = EarlyStoppingHandler(monitor=est.train_metrics[0], patience=0, mode="max")
    est.fit(_data(), epochs=5, event_handlers=[h])
    assert (h.current_epoch, h.stopped_epoch) == (2, 1)
    assert "[Epoch 1] EarlyStoppingHandler: early stopping due to training accuracy not improving" in \
        capsys.readouterr().out
    h2 = EarlyStoppingHandler(monitor=est.train_metrics[0], patience=2, mode="max")
    est.fit(_data(), epochs=1, event_handlers=[h2])
    assert h2.current_epoch == 1 and not h2.stop_training


def test_early_stopping_checks():
    with pytest.raises(ValueError, match="Please provide one of the metric objects"):
        EarlyStoppingHandler("acc")
    with pytest.raises(ValueError, match="CompositeEvalMetric is not supported for EarlyStoppingHandler"):
        EarlyStoppingHandler(mx.metric.CompositeEvalMetric([mx.metric.Accuracy()]))
    with pytest.warns(RuntimeWarning, match="EarlyStopping mode sideways is unknown"):
        with pytest.warns(UserWarning, match="`less` operator"):
            h = EarlyStoppingHandler(Scripted(), mode="sideways")
    with pytest.warns(RuntimeWarning, match="loss is not updated, make sure you pass one of the metric objects"):
        assert _run_early_stopping(h, [float("nan")]) is None
