"""Block.save / Block.load: the whole model (tree of names, hybridized state, parameters)
written to '<prefix>-model.json' and '<prefix>-model.params' and read back into a model
built the same way later (so its automatic names differ)."""
import json

import numpy as np
import pytest

import jbind as mx
from jbind import gluon


class Chain(gluon.Block):
    """Children keyed by their own (counter-made) names, so a later copy has other keys."""

    def add(self, block):
        self._children[block.name + "_" + str(len(self._children))] = block

    def forward(self, x):
        for block in self._children.values():
            x = block(x)
        return x


def _model():
    inner = Chain()
    inner.add(gluon.nn.Dense(4))
    net = Chain()
    net.add(inner)
    net.add(gluon.nn.Dense(3))
    return net


def test_save_then_load_into_a_model_built_later(tmp_path):
    net = _model()
    net.initialize(mx.init.Uniform(1.0))
    net.hybridize()
    x = mx.nd.array(np.random.RandomState(0).randn(2, 5))
    want = net(x).asnumpy()
    prefix = str(tmp_path / "m")
    net.save(prefix)
    tree = json.loads((tmp_path / "m-model.json").read_text())
    (top,) = tree.values()
    assert top["orig_name"] == net.name and set(top["children"]) == {c.name for c in net._children.values()}
    assert (tmp_path / "m-model.params").exists()

    other = _model()  # new names: its keys differ from the saved ones until load renames them
    assert list(other._children) != list(net._children)
    other.load(prefix)
    assert list(other._children) == list(net._children)
    assert [c.name for c in other._children.values()] == [c.name for c in net._children.values()]
    assert all(d._active for d in (other._children[k] for k in other._children) if isinstance(d, gluon.nn.Dense))
    np.testing.assert_allclose(other(x).asnumpy(), want, rtol=1e-6)


def test_load_into_another_architecture_names_the_missing_block(tmp_path):
    net = _model()
    net.initialize()
    net(mx.nd.ones((1, 5)))
    net.save(str(tmp_path / "m"))
    different = Chain()
    different.add(gluon.nn.Dense(3))
    with pytest.raises(mx.base.MXNetError, match="no block 'dense"):
        different.load(str(tmp_path / "m"))
