"""gluon.model_zoo.vision against MXNet 1.9.1 (goldens from tests/golden/gluon/make_model_zoo_golden.py):
every model's parameter names (structural and full) and shapes, MXNet-saved parameter files
loading with MXNet's outputs, and pretrained files read from a local root only."""
import gzip
import json
import os

import numpy as np
import pytest

import jbind as mx
from jbind.base import MXNetError
from jbind.gluon.model_zoo import model_store, vision

HERE = os.path.join(os.path.dirname(__file__), "golden", "gluon")
ZOO = os.path.join(HERE, "model_zoo")
with gzip.open(os.path.join(ZOO, "names.json.gz"), "rb") as _f:
    NAMES = json.loads(_f.read())


def test_every_mxnet_model_is_in_the_zoo():
    assert sorted(NAMES) == sorted(vision._MODELS)
    assert len(NAMES) == 34


@pytest.mark.parametrize("name", sorted(NAMES))
def test_parameter_names_and_shapes_match_mxnet(name):
    want = NAMES[name]
    with mx.name.NameManager():
        net = vision.get_model(name)
    net.infer_shape(mx.nd.zeros(tuple(want["input"])))
    structural = net._collect_params_with_prefix()
    got = [[k, p.name, list(p.shape)] for k, p in sorted(structural.items())]
    assert got == want["params"]
    assert sorted(net.collect_params().keys()) == sorted(r[1] for r in want["params"])


def _build(name):
    v = vision
    return {"resnet18_v1_thin": lambda: v.ResNetV1(v.BasicBlockV1, [2, 2, 2, 2], [4, 4, 8, 12, 16], classes=10),
            "resnet_v2_bottleneck_thumb": lambda: v.ResNetV2(v.BottleneckV2, [1, 1, 1, 1], [8, 16, 24, 32, 48],
                                                             classes=10, thumbnail=True),
            "densenet_tiny": lambda: v.DenseNet(8, 4, [2, 1], classes=10),
            "mobilenetv2_0.25": lambda: v.get_model("mobilenetv2_0.25", classes=10)}[name]()


@pytest.mark.parametrize("name", ["resnet18_v1_thin", "resnet_v2_bottleneck_thumb", "densenet_tiny",
                                  "mobilenetv2_0.25"])
def test_mxnet_saved_parameters_give_mxnet_outputs(name, tmp_path):
    gold = np.load(os.path.join(ZOO, name + ".npz"))
    with mx.name.NameManager():
        net = _build(name)
    path = os.path.join(ZOO, name + ".params")
    if not os.path.exists(path):  # stored gzip-compressed (see make_model_zoo_golden.py)
        with gzip.open(path + ".gz", "rb") as f:
            (tmp_path / "p.params").write_bytes(f.read())
        path = str(tmp_path / "p.params")
    net.load_parameters(path)
    net.hybridize()
    out = net(mx.nd.array(gold["data"])).asnumpy()
    np.testing.assert_allclose(out, gold["out"], rtol=1e-4, atol=1e-4)


def test_mxnet_exported_mobilenet_loads_by_full_names():
    """MXNet's export of get_model('mobilenet0.25', classes=10): 'arg:'/'aux:' full names."""
    gold = np.load(os.path.join(HERE, "mobilenet0.25.npz"))
    with mx.name.NameManager():
        net = vision.get_model("mobilenet0.25", classes=10)
    net.collect_params().load(os.path.join(HERE, "mobilenet0.25-0000.params"))
    net.hybridize()
    out = net(mx.nd.array(gold["data"])).asnumpy()
    np.testing.assert_allclose(out, gold["out"], rtol=1e-4, atol=1e-4)


def test_get_model_is_case_insensitive_and_rejects_unknown_names():
    assert isinstance(vision.get_model("ResNet18_V1"), vision.ResNetV1)
    with pytest.raises(ValueError, match="(?s)resnet19_v1 is not supported.*alexnet"):
        vision.get_model("resnet19_v1")
    with pytest.raises(MXNetError):
        vision.get_model("nope")


def test_pretrained_reads_local_root_and_names_the_missing_file(tmp_path):
    with pytest.raises(MXNetError, match=r"resnet18_v1-a0666292\.params.*absent.*does not download"):
        vision.get_model("resnet18_v1", pretrained=True, root=str(tmp_path))
    (tmp_path / "mobilenet0.25-9f83e440.params").write_bytes(b"not MXNet's file")
    with pytest.raises(MXNetError, match="SHA-1"):
        vision.mobilenet0_25(pretrained=True, root=str(tmp_path))


def test_pretrained_default_root_is_mxnet_home(tmp_path, monkeypatch):
    monkeypatch.setenv("MXNET_HOME", str(tmp_path))
    with pytest.raises(MXNetError, match=str(tmp_path / "models" / "alexnet-44335d1f.params")):
        vision.alexnet(pretrained=True)


def test_pretrained_file_with_mxnet_hash_loads(tmp_path, monkeypatch):
    """A file whose SHA-1 is the published one is loaded with load_parameters."""
    with mx.name.NameManager():
        src = vision.squeezenet1_1(classes=3)
    src.infer_shape(mx.nd.zeros((1, 3, 224, 224)))
    src.initialize(mx.init.Xavier())
    path = tmp_path / "saved.params"
    src.save_parameters(str(path))
    sha1 = _sha1(path)
    monkeypatch.setitem(model_store._SHA1, "squeezenet1.1", sha1)
    path.rename(tmp_path / f"squeezenet1.1-{sha1[:8]}.params")
    net = vision.squeezenet1_1(classes=3, pretrained=True, root=str(tmp_path))
    for (k, a), (k2, b) in zip(sorted(src._collect_params_with_prefix().items()),
                               sorted(net._collect_params_with_prefix().items())):
        assert k == k2
        np.testing.assert_array_equal(a.data().asnumpy(), b.data().asnumpy())


def _sha1(path):
    import hashlib
    return hashlib.sha1(path.read_bytes()).hexdigest()


def test_mxnet_legacy_parameter_file_loads_whatever_the_prefix():
    """Names less the network's prefix (MXNet's older published files) load into a network
    whose prefix is not the one it was saved from ('resnetv21_' here, saved from 'resnetv20_')."""
    name = "resnet_v2_bottleneck_thumb"
    gold = np.load(os.path.join(ZOO, name + ".npz"))
    with mx.name.NameManager():
        _build(name)
        net = _build(name)
    assert net.prefix == "resnetv21_"
    net.load_parameters(os.path.join(ZOO, name + "-legacy.params"))
    net.hybridize()
    np.testing.assert_allclose(net(mx.nd.array(gold["data"])).asnumpy(), gold["out"], rtol=1e-4, atol=1e-4)
