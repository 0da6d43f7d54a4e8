"""A `.states` file is data (issue 20, part 1): malicious optimizer-state files, each of
whose payloads would create a marker file, go through every public path that loads
optimizer states; nothing runs, and each is an MXNetError naming the file and what was
refused. MXNet 1.9.1's own `.states` files still load."""
import collections
import glob
import os
import pickle
import subprocess
import warnings

import numpy as np
import pytest

import jbind as mx
from jbind.base import MXNetError
from jbind.io_util import atomic_write_bytes
from jbind.optimizer._states import dumps as states_dumps

HERE = os.path.dirname(__file__)


class _Reduce:
    """Pickles as `func(*args)`: what an attacker's `__reduce__` writes."""

    def __init__(self, func, *args):
        self.func, self.args = func, args

    def __reduce__(self):
        return self.func, self.args


def _good_states():
    return {0: None, 1: (mx.nd.ones((2,)), mx.nd.zeros((2,)))}


def _payloads(marker):
    """name -> (bytes of a `.states` file, regex its error must match). Each would create `marker`."""
    m = str(marker)
    touch = f"touch {m}"
    opener = f"open({m!r}, 'w').close()"
    evil_os = _Reduce(os.system, touch)
    sched = mx.lr_scheduler.FactorScheduler(step=10)
    out = {
        # protocol 0, written by hand: GLOBAL os.system, REDUCE
        "os.system": (b"cos\nsystem\n(V" + touch.encode() + b"\ntR.", r"os\.system"),
        "posix.system in a dict in a list": (pickle.dumps({0: [{"w": evil_os}]}), r"posix\.system"),
        "subprocess.call next to real states": (
            states_dumps({**_good_states(), 2: (None, _Reduce(subprocess.call, ["touch", m]))}), r"subprocess\.call"),
        "builtins.eval": (pickle.dumps({0: _Reduce(eval, opener)}), r"builtins\.eval"),
        "builtins.exec": (pickle.dumps([_Reduce(exec, opener)]), r"builtins\.exec"),
        # getattr(__import__('os'), 'system')(touch), by hand
        "builtins.getattr": (b"cbuiltins\ngetattr\n(cbuiltins\n__import__\n(Vos\ntRVsystem\ntR(V"
                             + touch.encode() + b"\ntR.", r"builtins\.getattr"),
        "importlib.import_module": (b"cimportlib\nimport_module\n(Vos\ntR.", r"importlib\.import_module"),
        "pickle.loads of a nested pickle": (
            pickle.dumps({0: _Reduce(pickle.loads, pickle.dumps(evil_os))}), r"pickle\.loads"),
        # copyreg._reconstructor(Popen, Popen, argv) runs Popen.__init__(argv) under the plain unpickler
        "copyreg._reconstructor(subprocess.Popen)": (
            b"ccopyreg\n_reconstructor\n(csubprocess\nPopen\ncsubprocess\nPopen\n(lp0\nV"
            + b"touch\naV" + m.encode() + b"\natR.", r"subprocess\.Popen"),
        # a jbind function that writes files is not an optimizer class
        "jbind.io_util.atomic_write_bytes": (
            pickle.dumps({0: _Reduce(atomic_write_bytes, m, b"x")}), r"jbind\.io_util\.atomic_write_bytes"),
        # (states, not-an-optimizer): MXNet would put it in place of the optimizer
        "2-tuple with an OrderedDict": (pickle.dumps(({0: None}, collections.OrderedDict())), r"not an Optimizer"),
        "2-tuple with a scheduler": (pickle.dumps(({0: None}, sched)), r"FactorScheduler, not an Optimizer"),
        "2-tuple with a string": (pickle.dumps(({0: None}, "sgd")), r"str, not an Optimizer"),
        # BUILD on a class: would set attributes on jbind's FactorScheduler for the whole process
        "BUILD on a class": (b"cjbind.lr_scheduler\nFactorScheduler\n(N(dVbase_lr\nI5\nstb.",
                             r"set attributes on a type"),
        # an optimizer whose saved attributes shadow its update method
        "optimizer replacing its update method": (
            _with_attribute(mx.optimizer.SGD(), "update", collections.OrderedDict), r"replace SGD\.update"),
        "optimizer with a bad scheduler": (
            _with_attribute(mx.optimizer.SGD(), "lr_scheduler", collections.OrderedDict()), r"not an LRScheduler"),
        "a state that is not an array": (pickle.dumps({0: (None, {"x": 1})}), r"holds a dict"),
        "a bytearray the size of the disk": (b"cbuiltins\nbytearray\n(J\x00\x00\x00\x7ftR.", r"bytearray"),
    }
    return out


def _with_attribute(opt, name, value):
    """`({0: None}, opt)` pickled with `opt`'s saved attribute `name` set to `value`."""
    setattr(opt, name, value)
    return pickle.dumps(({0: None}, opt), protocol=4)


NAMES = list(_payloads("m"))


def _sgd_module(tmp_path):
    x = np.random.RandomState(0).rand(8, 3).astype(np.float32)
    it = mx.io.NDArrayIter(x, np.arange(8) % 2, batch_size=4)
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=2, name="fc"), name="softmax")
    mod = mx.mod.Module(net, context=mx.cpu())
    mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    mod.init_params()
    mod.init_optimizer(optimizer="sgd", optimizer_params={"momentum": 0.9})
    return mod, it


def _check(name, tmp_path, load, expect_file):
    marker = tmp_path / "marker"
    blob, match = _payloads(marker)[name]
    fname = tmp_path / "evil-0001.states"
    fname.write_bytes(blob)
    with pytest.raises(MXNetError, match=match) as info:
        load(blob, str(fname))
    if expect_file:
        assert "evil-0001.states" in str(info.value)
    assert not marker.exists(), "the payload ran"
    assert mx.lr_scheduler.FactorScheduler.__dict__.get("base_lr") is None


@pytest.mark.parametrize("name", NAMES)
def test_updater_set_states_refuses(name, tmp_path):
    updater = mx.optimizer.get_updater(mx.optimizer.SGD(momentum=0.9))
    optimizer, states = updater.optimizer, updater.states
    _check(name, tmp_path, lambda blob, fname: updater.set_states(blob), expect_file=False)
    assert updater.optimizer is optimizer and updater.states is states


@pytest.mark.parametrize("name", NAMES)
def test_kvstore_load_optimizer_states_refuses(name, tmp_path):
    kv = mx.kv.create("local")
    kv.set_optimizer(mx.optimizer.SGD(momentum=0.9))
    _check(name, tmp_path, lambda blob, fname: kv.load_optimizer_states(fname), expect_file=True)
    assert isinstance(kv._updater.optimizer, mx.optimizer.SGD)


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    return _sgd_module(tmp_path_factory.mktemp("mod"))


@pytest.mark.parametrize("name", NAMES)
def test_module_load_optimizer_states_refuses(name, tmp_path, module):
    mod, _ = module
    _check(name, tmp_path, lambda blob, fname: mod.load_optimizer_states(fname), expect_file=True)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ckpt")
    mod, it = _sgd_module(folder)
    mod.save_checkpoint(str(folder / "evil"), 1, save_optimizer_states=True)
    return folder, it


@pytest.mark.parametrize("how", ["init_optimizer", "fit"])
@pytest.mark.parametrize("name", NAMES)
def test_module_load_with_optimizer_states_refuses(name, how, tmp_path, checkpoint):
    folder, it = checkpoint
    for f in glob.glob(str(folder / "evil-*")):
        os.link(f, tmp_path / os.path.basename(f))
    prefix = str(tmp_path / "evil")

    def load(blob, fname):
        mod = mx.mod.Module.load(prefix, 1, load_optimizer_states=True, context=mx.cpu())
        if how == "fit":
            with warnings.catch_warnings():  # fit's init_params on a loaded module, as MXNet's
                warnings.filterwarnings("ignore", "Parameters already initialized", UserWarning)
                mod.fit(it, num_epoch=1, optimizer="sgd")
        else:
            mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
            mod.init_optimizer(optimizer="sgd")
    # _check writes the file under tmp_path: the checkpoint's .states, replaced
    os.remove(tmp_path / "evil-0001.states")
    _check(name, tmp_path, load, expect_file=True)


def test_golden_mxnet_states_still_load_and_round_trip():
    files = sorted(glob.glob(os.path.join(HERE, "golden", "**", "*.states"), recursive=True))
    assert len(files) >= 5
    for f in files:
        kv = mx.kv.create("local")
        kv.set_optimizer(mx.optimizer.Adam())
        kv.load_optimizer_states(f)
        states = kv._updater.states
        assert states and all(isinstance(k, (int, str)) for k in states)
        arrays = [a for s in states.values() for a in (s if isinstance(s, tuple) else (s,)) if a is not None]
        assert arrays and all(isinstance(a, mx.nd.NDArray) for a in arrays)
        again = mx.optimizer.get_updater(mx.optimizer.Adam())
        again.set_states(kv._updater.get_states())
        for k, s in states.items():
            for a, b in zip(s if isinstance(s, tuple) else (s,), again.states[k] if isinstance(s, tuple)
                            else (again.states[k],)):
                if a is not None:
                    np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())


def test_dumped_optimizer_with_scheduler_and_numpy_hyperparameters_loads():
    """jbind's own `dump_optimizer=True` states name only allowed globals, numpy numbers included."""
    opt = mx.optimizer.Adam(learning_rate=np.float32(0.5), lr_scheduler=mx.lr_scheduler.FactorScheduler(step=3),
                            beta1=np.float64(0.8))
    u = mx.optimizer.get_updater(opt)
    for _ in range(2):
        u(0, mx.nd.ones((2,)), mx.nd.ones((2,)))
    again = mx.optimizer.get_updater(mx.optimizer.SGD())
    again.set_states(u.get_states(dump_optimizer=True))
    got = again.optimizer
    assert type(got) is mx.optimizer.Adam and type(got.lr_scheduler) is mx.lr_scheduler.FactorScheduler
    assert (got.lr, got.beta1, got.num_update) == (0.5, 0.8, 2)
    np.testing.assert_array_equal(again.states[0][0].asnumpy(), u.states[0][0].asnumpy())


class MySecurityTestOpt(mx.optimizer.SGD):
    """A user's optimizer, registered by the test below."""


def test_registered_optimizer_loads_and_an_unregistered_class_does_not(tmp_path):
    mx.optimizer.register(MySecurityTestOpt)
    try:
        u = mx.optimizer.get_updater(MySecurityTestOpt(learning_rate=0.25))
        blob = u.get_states(dump_optimizer=True)
        again = mx.optimizer.get_updater(mx.optimizer.SGD())
        again.set_states(blob)
        assert type(again.optimizer) is MySecurityTestOpt and again.optimizer.lr == 0.25
    finally:
        del mx.optimizer.Optimizer.opt_registry["mysecuritytestopt"]
    with pytest.raises(MXNetError, match="MySecurityTestOpt"):
        mx.optimizer.get_updater(mx.optimizer.SGD()).set_states(blob)
