"""mx.io iterators and mx.rnn's sentence bucketing, against MXNet 1.9.1 golden data."""
import json
import os
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jbind as mx

GOLDEN = os.path.join(os.path.dirname(__file__), "golden")
sys.path.insert(0, GOLDEN)
import rnn_cases as rc  # noqa: E402

with open(os.path.join(GOLDEN, "rnn", "io.json")) as _f:
    IO = json.load(_f)


@pytest.mark.parametrize("name", sorted(IO["encode"]))
def test_encode_sentences_matches_mxnet(name):
    args = {"default": (rc.WORDS, {}), "invalid0": (rc.WORDS, {"invalid_label": 0, "start_label": 0}),
            "unknown": (rc.WORDS[2:], {"vocab": {"the": 5, "cat": 6}, "unknown_token": "<unk>"})}[name]
    res, vocab = mx.rnn.encode_sentences(args[0], **args[1])
    assert [res, vocab] == IO["encode"][name]


def _mxnet_encode(sentences, vocab, invalid_label, start_label, invalid_key="\n", unknown_token=None):
    """MXNet 1.9.1's encode_sentences loop, word by word, for comparison (on a copy of `vocab`)."""
    idx, res = start_label, []
    new_vocab = vocab is None
    vocab = {invalid_key: invalid_label} if new_vocab else dict(vocab)
    for sent in sentences:
        coded = []
        for word in sent:
            if word not in vocab:
                if not (new_vocab or unknown_token):  # MXNet's assert (spelled out: pytest rewrites asserts)
                    raise AssertionError("Unknown token %s" % word)
                if idx == invalid_label:
                    idx += 1
                if unknown_token:
                    word = unknown_token
                vocab[word] = idx
                idx += 1
            coded.append(vocab[word])
        res.append(coded)
    return res, vocab


@pytest.mark.parametrize("seed", range(4))
def test_encode_sentences_equals_mxnets_loop_on_random_corpora(seed):
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(30)]
    sents = [list(rng.choice(words, size=rng.integers(0, 8))) for _ in range(50)]
    got, vocab = mx.rnn.encode_sentences(sents, invalid_label=3, start_label=1)
    assert (got, vocab) == _mxnet_encode(sents, None, 3, 1)
    more = [list(rng.choice(words, size=rng.integers(0, 8))) for _ in range(20)]
    assert mx.rnn.encode_sentences(more, vocab=dict(vocab), invalid_label=3, start_label=1)[0] == \
        _mxnet_encode(more, vocab, 3, 1)[0]


# Tokens include the invalid key, the unknown token, an unhashable one and a tuple that
# "Unknown token %s" cannot format: the errors must be MXNet's, raised at the same token.
_TOKENS = st.sampled_from(["a", "b", "c", "d", "e", "\n", "<unk>", ("p", "q"), ["x"]])


@settings(max_examples=300, deadline=None)
@given(sents=st.lists(st.tuples(st.lists(_TOKENS, max_size=6), st.sampled_from(["list", "tuple", "filter"])),
                      max_size=8),
       vocab=st.none() | st.dictionaries(st.sampled_from(["a", "b", "c", "\n", "<unk>"]), st.integers(-3, 9),
                                         max_size=4),
       start_label=st.integers(-3, 4), invalid_label=st.integers(-3, 8),
       unknown_token=st.sampled_from([None, "", "<unk>", "a"]), one_shot=st.booleans())
def test_encode_sentences_equals_mxnets_loop_including_errors(sents, vocab, start_label, invalid_label,
                                                              unknown_token, one_shot):
    lists = [list(toks) for toks, _ in sents]
    kw = {"invalid_label": invalid_label, "start_label": start_label, "unknown_token": unknown_token}
    try:
        want, want_err = _mxnet_encode(lists, vocab, **kw), None
    except (AssertionError, TypeError) as e:
        want, want_err = None, (type(e) is TypeError, str(e))
    given_vocab = None if vocab is None else dict(vocab)
    inputs = [{"list": list, "tuple": tuple, "filter": lambda t: filter(None, t)}[kind](toks)
              for toks, kind in sents]
    try:
        got, got_err = mx.rnn.encode_sentences(iter(inputs) if one_shot else inputs, vocab=given_vocab, **kw), None
    except (AssertionError, TypeError) as e:
        got, got_err = None, (type(e) is TypeError, str(e))
        assert isinstance(e, (TypeError, mx.base.MXNetError))
    assert got_err == want_err
    if want is not None:
        assert got[0] == want[0] and list(got[1].items()) == list(want[1].items())  # same order too
        assert vocab is None or got[1] is given_vocab


def test_encode_sentences_extends_the_given_vocab_in_place():
    vocab = {"\n": 0, "a": 1}
    res, out = mx.rnn.encode_sentences([["a", "b"], ["c", "a"]], vocab=vocab, invalid_label=0, start_label=1,
                                       unknown_token="<unk>")
    assert out is vocab and res == [[1, 1], [2, 1]] and vocab == {"\n": 0, "a": 1, "<unk>": 2}
    # tokens read before an error stay in it, as MXNet's loop leaves them
    with pytest.raises(TypeError):
        mx.rnn.encode_sentences([["a", "z", ["x"]]], vocab=vocab, invalid_label=0, start_label=5,
                                unknown_token="<unk>")
    assert vocab == {"\n": 0, "a": 1, "<unk>": 5}


def test_encode_sentences_reads_one_shot_iterables_like_lists():
    """MXNet's lstm_bucketing.py passes `filter` objects: every token must be read once,
    also from a sentence holding a token the vocabulary does not have yet."""
    lines = ["a b  c", "a d e", "", "e b"]
    want = mx.rnn.encode_sentences([list(filter(None, line.split(" "))) for line in lines],
                                   invalid_label=0, start_label=1)
    assert want == ([[1, 2, 3], [1, 4, 5], [], [5, 2]], {"\n": 0, "a": 1, "b": 2, "c": 3, "d": 4, "e": 5})
    assert mx.rnn.encode_sentences([filter(None, line.split(" ")) for line in lines],
                                   invalid_label=0, start_label=1) == want
    assert mx.rnn.encode_sentences((iter(line.split()) for line in lines), invalid_label=0, start_label=1) == want
    more, vocab = mx.rnn.encode_sentences([filter(None, "e f a".split(" "))], vocab=dict(want[1]),
                                          unknown_token="<unk>", invalid_label=0, start_label=1)
    assert more == [[5, 1, 1]] and vocab["<unk>"] == 1  # MXNet's numbering restarts at start_label


def test_encode_sentences_refuses_unknown_tokens_with_a_fixed_vocab():
    with pytest.raises(AssertionError, match="Unknown token dog"):
        mx.rnn.encode_sentences([["cat", "dog"]], vocab={"cat": 1})


def test_golden_sentences_are_the_same():
    assert rc.sentences() == IO["sentences"]


@pytest.mark.parametrize("name", sorted(rc.BUCKET_ITERS))
def test_bucket_sentence_iter_matches_mxnet(name, capsys):
    want = IO["bucket"][name]
    rc.seed_all(11)
    it = mx.rnn.BucketSentenceIter(rc.sentences(), **rc.BUCKET_ITERS[name])
    assert "WARNING: discarded" in capsys.readouterr().out
    assert it.buckets == want["buckets"]
    assert it.default_bucket_key == want["default_bucket_key"]
    assert rc.describe(it.provide_data) == want["provide_data"]
    assert rc.describe(it.provide_label) == want["provide_label"]
    assert rc.record_batches(it, epochs=2) == want["epochs"]


def test_bucket_sentence_iter_pads_shifts_labels_and_transposes():
    sents = [[1, 2, 3], [4, 5], [6, 7, 8, 9, 10], [12, 13, 14, 15, 16, 17]]
    it = mx.rnn.BucketSentenceIter(sents, batch_size=2, buckets=[3, 5], invalid_label=-1, layout="TN")
    assert it.buckets == [3, 5] and it.default_bucket_key == 5
    assert it.provide_data[0].shape == (5, 2) and it.provide_data[0].layout == "TN"
    batches = {b.bucket_key: b for b in it}
    assert sorted(batches) == [3]  # bucket 5 holds one sentence: no full batch; one discarded
    data, label = batches[3].data[0].asnumpy(), batches[3].label[0].asnumpy()
    assert data.shape == (3, 2) and batches[3].pad == 0
    rows = sorted(map(tuple, data.T.tolist()))
    assert rows == [(1, 2, 3), (4, 5, -1)]
    for d, lb in zip(data.T, label.T):
        np.testing.assert_array_equal(lb, np.append(d[1:], -1))
    with pytest.raises(ValueError, match="Invalid layout"):
        mx.rnn.BucketSentenceIter(sents, batch_size=2, buckets=[3, 5], layout="TC")


def test_bucket_sentence_iter_batches_survive_the_next_reset(capsys):
    rng = np.random.RandomState(0)
    sents = [list(rng.randint(1, 50, size=rng.randint(2, 9))) for _ in range(64)]
    it = mx.rnn.BucketSentenceIter(sents, batch_size=4, buckets=[4, 8], invalid_label=0, seed=3)
    batches = list(it)
    before = [(b.data[0].asnumpy().copy(), b.label[0].asnumpy().copy()) for b in batches]
    it.reset()  # reshuffles every bucket
    for b, (d, lab) in zip(batches, before):
        np.testing.assert_array_equal(b.data[0].asnumpy(), d)
        np.testing.assert_array_equal(b.label[0].asnumpy(), lab)
    # MXNet's per-bucket attributes hold this epoch's order: the batches are cut from them.
    first = it.next()
    k = it.buckets.index(first.bucket_key)
    i, j = it.idx[0]
    np.testing.assert_array_equal(first.data[0].asnumpy(), it.nddata[k].asnumpy()[j:j + 4])
    np.testing.assert_array_equal(first.label[0].asnumpy(), it.ndlabel[k].asnumpy()[j:j + 4])


@pytest.mark.parametrize("name", sorted(rc.ND_ITERS))
def test_ndarray_iter_matches_mxnet(name):
    want = IO["nd"][name]
    rc.seed_all(5)
    it = rc.nd_iter(mx, **rc.ND_ITERS[name])
    assert rc.describe(it.provide_data) == want["provide_data"]
    assert rc.describe(it.provide_label) == want["provide_label"]
    assert rc.record_batches(it) == want["epochs"]


def test_resize_iter_matches_mxnet():
    want = IO["nd"]["resize"]
    rc.seed_all(5)
    it = mx.io.ResizeIter(rc.nd_iter(mx, 10, batch_size=3, last_batch_handle="discard"), 5)
    assert rc.describe(it.provide_data) == want["provide_data"]
    assert rc.record_batches(it, epochs=2) == want["epochs"]


def test_ndarray_iter_pad_discard_roll_over():
    data = np.arange(5, dtype=np.float32)[:, None]

    def epoch(it):
        return [(b.data[0].asnumpy()[:, 0].tolist(), b.pad) for b in it]

    it = mx.io.NDArrayIter(data, batch_size=2, last_batch_handle="pad")
    assert epoch(it) == [([0, 1], 0), ([2, 3], 0), ([4, 0], 1)]
    it = mx.io.NDArrayIter(data, batch_size=2, last_batch_handle="discard")
    assert epoch(it) == [([0, 1], 0), ([2, 3], 0)]
    it.reset()
    assert epoch(it) == [([0, 1], 0), ([2, 3], 0)]
    it = mx.io.NDArrayIter(data, batch_size=2, last_batch_handle="roll_over")
    assert epoch(it) == [([0, 1], 0), ([2, 3], 0)]
    it.reset()
    assert epoch(it) == [([4, 0], 1), ([1, 2], 0), ([3, 4], 0)]
    it.hard_reset()
    assert epoch(it)[0] == ([0, 1], 0)


def test_ndarray_iter_names_and_dtypes():
    it = mx.io.NDArrayIter({"b": np.zeros((4, 3), np.int32), "a": mx.nd.zeros((4,), dtype="int32")},
                           [np.zeros(4), np.ones(4)], batch_size=2)
    assert [d.name for d in it.provide_data] == ["a", "b"]
    assert [d.dtype for d in it.provide_data] == [np.int32, np.float32]  # numpy becomes float32, as MXNet
    assert [d.name for d in it.provide_label] == ["_0_softmax_label", "_1_softmax_label"]
    assert it.provide_data[1].shape == (2, 3) and it.provide_data[1].layout == "NCHW"
    batch = next(iter(it))
    assert batch.index is None and batch.provide_data is None and len(batch.label) == 2
    assert str(batch) == "DataBatch: data shapes: [(2,), (2, 3)] label shapes: [(2,), (2,)]"
    with pytest.raises(ValueError, match="last_batch_handle"):
        mx.io.NDArrayIter(np.zeros(3), last_batch_handle="wrap")


def test_data_desc_and_base_iter():
    d = mx.io.DataDesc("data", (2, 3))
    assert d == ("data", (2, 3)) and d.dtype is np.float32 and d.layout == "NCHW"
    assert repr(d) == "DataDesc[data,(2, 3),<class 'numpy.float32'>,NCHW]"
    assert mx.io.DataDesc.get_batch_axis("TNC") == 1 and mx.io.DataDesc.get_batch_axis(None) == 0
    descs = mx.io.DataDesc.get_list([("a", (1,)), ("b", (2,))], [("a", np.int32), ("b", np.float16)])
    assert [(x.name, x.shape, x.dtype) for x in descs] == [("a", (1,), np.int32), ("b", (2,), np.float16)]

    class Two(mx.io.DataIter):
        def __init__(self):
            super().__init__(batch_size=1)
            self.n = 0

        def iter_next(self):
            self.n += 1
            return self.n <= 2

        def getdata(self):
            return [mx.nd.ones((1,)) * self.n]

    batches = list(Two())
    assert [b.data[0].asscalar() for b in batches] == [1, 2] and batches[0].index is None
    with pytest.raises(TypeError):
        mx.io.DataBatch(mx.nd.ones((1,)))


# --- one part per worker (num_parts / part_index, jbind extension) ------------------------------
def _batches(it, epochs=2):
    out = []
    for _ in range(epochs):
        it.reset()
        out.append([(b.bucket_key, b.data[0].asnumpy(), b.label[0].asnumpy(), b.pad) for b in it])
    return out


@pytest.mark.parametrize("kw", [{}, {"buckets": [4, 8, 10], "layout": "TN", "invalid_label": 0}])
def test_bucket_sentence_iter_parts_split_the_global_batches(kw, capsys):
    """Parts 0 and 1 at batch 3, concatenated, are the batches of one iterator at batch 6, step by step."""
    axis = 1 if kw.get("layout") == "TN" else 0
    whole = _batches(mx.rnn.BucketSentenceIter(rc.sentences(), 6, seed=5, **dict(kw)))
    parts = [_batches(mx.rnn.BucketSentenceIter(rc.sentences(), 3, num_parts=2, part_index=k, seed=5, **dict(kw)))
             for k in range(2)]
    assert sum(len(e) for e in whole) > 4
    for e, epoch in enumerate(whole):
        assert len(parts[0][e]) == len(parts[1][e]) == len(epoch)
        for (key, data, label, _), p0, p1 in zip(epoch, parts[0][e], parts[1][e]):
            assert key == p0[0] == p1[0]
            assert p0[1].shape[axis] == 3
            np.testing.assert_array_equal(np.concatenate([p0[1], p1[1]], axis=axis), data)
            np.testing.assert_array_equal(np.concatenate([p0[2], p1[2]], axis=axis), label)
    assert whole[0] != whole[1] or len(whole[0]) == 1  # reset reshuffles, alike on every part
    capsys.readouterr()


def test_bucket_sentence_iter_seed_is_seeding_the_global_rngs(capsys):
    """seed=s shuffles as MXNet does after random.seed(s) and np.random.seed(s)."""
    want = IO["bucket"]["auto_nt"]
    rc.seed_all(99)
    it = mx.rnn.BucketSentenceIter(rc.sentences(), seed=11, **rc.BUCKET_ITERS["auto_nt"])
    assert rc.record_batches(it, epochs=2) == want["epochs"]
    a = mx.rnn.BucketSentenceIter(rc.sentences(), 2, num_parts=2, part_index=0)  # seed 0 by default
    b = mx.rnn.BucketSentenceIter(rc.sentences(), 2, num_parts=2, part_index=0, seed=0)
    assert [x.bucket_key for x in a] == [x.bucket_key for x in b]
    capsys.readouterr()


@pytest.mark.parametrize("num_parts,part_index", [(2, 2), (2, -1), (0, 0), (2.0, 0), (2, True)])
def test_bad_parts(num_parts, part_index, capsys):
    with pytest.raises(mx.MXNetError, match="num_parts|part_index"):
        mx.rnn.BucketSentenceIter(rc.sentences(), 2, num_parts=num_parts, part_index=part_index)
    with pytest.raises(mx.MXNetError, match="num_parts|part_index"):
        mx.io.NDArrayIter(np.zeros((8, 2)), batch_size=2, num_parts=num_parts, part_index=part_index)
    capsys.readouterr()


@pytest.mark.parametrize("n", [8, 10])
def test_ndarray_iter_parts_are_contiguous_shares(n):
    """Part k reads examples [int(n / p * k), int(n / p * (k + 1))), as MXNet's MNISTIter splits."""
    x = np.arange(n * 2, dtype=np.float32).reshape(n, 2)
    y = np.arange(n, dtype=np.float32)
    for k in range(3):
        it = mx.io.NDArrayIter(x, y, batch_size=2, num_parts=3, part_index=k, last_batch_handle="discard")
        lo, hi = int(n / 3 * k), int(n / 3 * (k + 1))
        for _ in range(2):  # reset() keeps the part
            it.reset()
            labels = np.concatenate([b.label[0].asnumpy() for b in it])
            np.testing.assert_array_equal(labels, y[lo:lo + (hi - lo) // 2 * 2])
        assert it.provide_data[0].shape == (2, 2)
    with pytest.raises(mx.MXNetError, match="empty"):
        mx.io.NDArrayIter(x[:2], batch_size=1, num_parts=3, part_index=0)
