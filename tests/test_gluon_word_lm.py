"""examples/gluon_word_lm.py (issue #21 part 10): the Gluon LSTM language model trains on
a small corpus, its perplexity drops, and the hybridized model compiles once per shape
and mode however many segments and epochs it runs."""
import importlib.util
import os

import numpy as np
import pytest

import jbind as mx

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(os.path.dirname(HERE), "examples", "gluon_word_lm.py")


@pytest.fixture(scope="module")
def lm():
    spec = importlib.util.spec_from_file_location("gluon_word_lm", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _corpus(path, n, rng):
    sentences = ["the cat sat on a mat", "a dog ran to the cat", "see the big red dog"]
    with open(path, "w") as f:
        f.writelines(sentences[i] + "\n" for i in rng.integers(0, 3, size=n))


def test_batchify_makes_columns_and_get_batch_shifts_by_one(lm):
    ids = np.arange(23, dtype=np.float32)
    b = lm.batchify(ids, 4)  # 5 rows; the 3 ids that do not fill a row are dropped
    assert b.shape == (5, 4)
    np.testing.assert_array_equal(b.asnumpy()[:, 1], np.arange(5, 10))  # each column a contiguous stream
    data, target = lm.get_batch(b, 0, 3)
    assert data.shape == (3, 4) and target.shape == (12,)
    np.testing.assert_array_equal(target.asnumpy(), b.asnumpy()[1:4].reshape(-1))
    data, target = lm.get_batch(b, 3, 3)  # the last segment is shorter: rows 3 .. 3 predict row 4
    assert data.shape == (1, 4)
    np.testing.assert_array_equal(target.asnumpy(), b.asnumpy()[4])
    with pytest.raises(ValueError, match="too short"):
        lm.batchify(ids[:5], 4)


def test_detach_keeps_values_and_cuts_the_graph(lm):
    w = mx.nd.array([2.0, 3.0])
    w.attach_grad()
    with mx.autograd.record():
        h = [w * w, w * 4]
        cut = lm.detach(h)
        loss = (cut[0] * w).sum() + cut[1].sum()
    loss.backward()
    np.testing.assert_allclose(cut[0].asnumpy(), [4.0, 9.0])
    np.testing.assert_allclose(w.grad.asnumpy(), [4.0, 9.0])  # only the direct use of w: the states are constants


def test_training_lowers_perplexity_and_compiles_once_per_shape(lm, tmp_path):
    rng = np.random.default_rng(0)
    _corpus(tmp_path / "train.txt", 200, rng)
    _corpus(tmp_path / "valid.txt", 40, rng)
    args = lm.build_parser().parse_args(
        ["--data", str(tmp_path), "--epochs", "2", "--log-interval", "3", "--emsize", "16", "--nhid", "16",
         "--nlayers", "1", "--batch_size", "4", "--bptt", "5", "--max-batches", "6", "--dropout", "0"])
    lines = []
    with mx.compile.count_compiles() as n:
        result = lm.train(args, log=lines.append)
    # 12 training segments of one shape and the validation segments of another: one compile
    # of forward + backward, one of inference.
    assert n() == 2, mx.compile.misses()[-n():]
    assert result["val_ppl"][1] < 0.85 * result["val_ppl"][0], result
    assert result["val_ppl"][1] < 13  # below the uniform guess over the 13-word vocabulary
    assert len(result["tokens_per_s"]) == 4 and all(t > 0 for t in result["tokens_per_s"])
    assert any("validation ppl" in s for s in lines) and any("tokens/s" in s for s in lines)


def test_tied_weights_share_the_embedding(lm):
    model = lm.RNNModel(11, 8, 8, 1, dropout=0.0, tie_weights=True)
    model.initialize()
    model.hybridize()
    hidden = model.begin_state(func=mx.nd.zeros, batch_size=2)
    out, hidden = model(mx.nd.zeros((3, 2)), hidden)
    assert out.shape == (6, 11) and hidden[0].shape == (1, 2, 8)
    assert model.decoder.weight is model.encoder.weight
    with pytest.raises(ValueError, match="--tied"):
        lm.RNNModel(11, 8, 6, 1, tie_weights=True)
