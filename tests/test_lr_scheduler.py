"""Learning-rate schedulers against MXNet 1.9.1 (tests/golden/optimizer/lr_scheduler.json)."""
import importlib.util
import json
import pathlib

import pytest

import jbind as mx

GOLDEN = pathlib.Path(__file__).resolve().parent / "golden"
_spec = importlib.util.spec_from_file_location("jbind_train_cases", GOLDEN / "train_cases.py")
tc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tc)
EXPECTED = json.loads((GOLDEN / "optimizer" / "lr_scheduler.json").read_text())


@pytest.mark.parametrize("name", sorted(tc.SCHED_CASES))
def test_matches_mxnet(name):
    cls, kwargs, calls = tc.SCHED_CASES[name]
    sched = getattr(mx.lr_scheduler, cls)(**kwargs)
    got = [sched(u) for u in calls]
    assert got == pytest.approx(EXPECTED[name], rel=1e-12, abs=1e-15)


def test_factor_scheduler_is_stateful():
    """Decays are applied to base_lr in place and never undone, as in MXNet."""
    s = mx.lr_scheduler.FactorScheduler(step=2, factor=0.5, base_lr=1.0)
    assert [s(1), s(2), s(3), s(5), s(1)] == [1.0, 1.0, 0.5, 0.25, 0.25]
    assert s.base_lr == 0.25 and s.count == 4


def test_argument_checks():
    with pytest.raises(ValueError, match="greater or equal than 1"):
        mx.lr_scheduler.FactorScheduler(step=0)
    with pytest.raises(ValueError, match="no more than 1"):
        mx.lr_scheduler.FactorScheduler(step=2, factor=2.0)
    with pytest.raises(ValueError, match="increasing"):
        mx.lr_scheduler.MultiFactorScheduler(step=[3, 2])
    with pytest.raises(ValueError, match="warmup_begin_lr"):
        mx.lr_scheduler.PolyScheduler(10, base_lr=0.1, warmup_begin_lr=0.5)
    with pytest.raises(ValueError, match="linear and constant"):
        mx.lr_scheduler.CosineScheduler(10, warmup_mode="cubic")
    with pytest.raises(NotImplementedError):
        mx.lr_scheduler.LRScheduler()(1)


def test_optimizer_uses_scheduler_and_overrides_base_lr():
    sched = mx.lr_scheduler.MultiFactorScheduler(step=[2], factor=0.1, base_lr=1.0)
    opt = mx.optimizer.SGD(learning_rate=0.5, lr_scheduler=sched)
    assert sched.base_lr == 0.5
    w = mx.nd.array([0.0])
    for _ in range(3):
        opt.update(0, w, mx.nd.array([1.0]), None)
    assert w.asnumpy()[0] == pytest.approx(-(0.5 + 0.5 + 0.05), rel=1e-6)
