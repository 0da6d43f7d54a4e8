"""Sentence data for language models: `encode_sentences` and `BucketSentenceIter` (MXNet 1.x's)."""
from __future__ import annotations

import itertools
import random

import numpy as np

from ..io import DataBatch, DataDesc, DataIter, check_part
from ..ndarray import array as _nd_array
from ._base import RNNError


class _Coder(dict):
    """A copy of the vocabulary whose lookups run MXNet's loop body for each token it lacks:
    check, skip `invalid_label`, map it (or `unknown_token`) to the next index, in the copy
    and in the caller's vocab. Known tokens are found at C speed by `map`."""

    __slots__ = ("vocab", "new_vocab", "unknown_token", "idx", "invalid_label")  # fast attributes

    def __missing__(self, word):
        # MXNet's assert: the message is formatted only on failure (a 2-tuple token can't be)
        if not (self.new_vocab or self.unknown_token):
            raise RNNError("Unknown token %s" % word)
        if self.idx == self.invalid_label:
            self.idx += 1
        if self.unknown_token:
            word = self.unknown_token
        self[word] = self.vocab[word] = idx = self.idx
        self.idx += 1
        return idx


def encode_sentences(sentences, vocab=None, invalid_label=-1, invalid_key="\n", start_label=0,
                     unknown_token=None):
    """Encode token lists as integer lists, building (or extending) a vocabulary.

    Args:
        sentences: token sequences: lists, or any iterables (read once each).
        vocab: an existing token -> index dict, extended in place; a new one (holding
            `invalid_key`) if None.
        invalid_label: the index of `invalid_key` (end of sentence); never given to a token.
        invalid_key: the token for `invalid_label` in a new vocabulary.
        start_label: the lowest index given to a new token.
        unknown_token: with a given `vocab`, tokens not in it map to this one (added if new);
            without it an unknown token is an error.

    Returns:
        (encoded sentences, vocab)
    """
    new_vocab = vocab is None
    if new_vocab:
        vocab = {invalid_key: invalid_label}
    # Tokens are read once, in order, as MXNet's loop reads them (sentences may be `filter`
    # objects): every new token gets its index, or raises, at its first appearance.
    coder = _Coder(vocab)
    coder.vocab, coder.new_vocab, coder.unknown_token = vocab, new_vocab, unknown_token
    coder.idx, coder.invalid_label = start_label, invalid_label
    code = coder.__getitem__
    return [list(map(code, sent)) for sent in sentences], vocab


class BucketSentenceIter(DataIter):
    """Batches of same-length (padded) sentences for a bucketing language model.

    Each sentence goes to the smallest bucket at least as long, padded with `invalid_label`;
    longer sentences are discarded. The label is the data shifted left by one step, ending
    with `invalid_label`. Every `reset()` shuffles the batch order (Python's `random`) and
    the sentences in each bucket (numpy's global random state), as MXNet does.

    Sharding (jbind extension, for `dist_sync` jobs): every worker builds the plan of one
    iterator with batch size `batch_size * num_parts` (the global batch): the same
    buckets, batches and shuffles, from RNGs seeded with `seed`, so all workers are at the
    same bucket at every step. Worker `part_index` then reads rows
    `[part_index * batch_size, (part_index + 1) * batch_size)` of each global batch: the
    parts' batches, concatenated in part order along the batch axis, are the batches of
    `BucketSentenceIter(sentences, batch_size * num_parts, ..., seed=seed)`, step by step.

    Args:
        sentences: encoded sentences (lists of ints).
        batch_size: sentences per batch.
        buckets: bucket lengths; if None, every length that at least `batch_size`
            sentences have.
        invalid_label: padding value.
        data_name: name of the data input.
        label_name: name of the label input.
        dtype: dtype of data and label.
        layout: 'NT' (batch, time) or 'TN' (time, batch).
        num_parts: how many workers share each global batch (jbind extension).
        part_index: this worker's part, 0 .. num_parts - 1.
        seed: seed of the iterator's own shuffling RNGs; None: the global ones (MXNet's
            behaviour), or 0 when `num_parts > 1` (every worker must shuffle alike).
    """

    def __init__(self, sentences, batch_size, buckets=None, invalid_label=-1, data_name="data",
                 label_name="softmax_label", dtype="float32", layout="NT", num_parts=1, part_index=0,
                 seed=None):
        super().__init__()
        check_part(num_parts, part_index)
        self.num_parts, self.part_index = num_parts, part_index
        if seed is None and num_parts > 1:
            seed = 0
        self.seed = seed
        self._py_random, self._np_random = (random, np.random) if seed is None else \
            (random.Random(seed), np.random.RandomState(seed))
        global_batch = batch_size * num_parts
        if not buckets:
            buckets = [i for i, j in enumerate(np.bincount([len(s) for s in sentences])) if j >= global_batch]
        buckets.sort()

        lengths = np.fromiter((len(s) for s in sentences), dtype=np.int64, count=len(sentences))
        which = np.searchsorted(np.asarray(buckets), lengths, side="left")  # smallest bucket >= length
        ndiscard = int(np.count_nonzero(which == len(buckets)))
        self.data = []
        kept = []
        for b, length in enumerate(buckets):
            rows = np.flatnonzero(which == b)
            if not len(rows):
                continue
            lens = lengths[rows]
            tokens = np.fromiter(itertools.chain.from_iterable(sentences[r] for r in rows),
                                 dtype=dtype, count=int(lens.sum()))
            padded = np.full((len(rows), length), invalid_label, dtype=dtype)
            padded[np.arange(length) < lens[:, None]] = tokens  # row by row, in sentence order
            self.data.append(padded)
            kept.append(length)
        buckets = kept

        print("WARNING: discarded %d sentences longer than the largest bucket." % ndiscard)

        self.batch_size = batch_size
        self.buckets = buckets
        self.data_name = data_name
        self.label_name = label_name
        self.dtype = dtype
        self.invalid_label = invalid_label
        self._labels = []
        self.major_axis = layout.find("N")
        self.layout = layout
        if not buckets:
            raise ValueError("BucketSentenceIter: no bucket holds any sentence")
        self.default_bucket_key = max(buckets)

        if self.major_axis == 0:
            shape = (batch_size, self.default_bucket_key)
        elif self.major_axis == 1:
            shape = (self.default_bucket_key, batch_size)
        else:
            raise ValueError("Invalid layout %s: Must by NT (batch major) or TN (time major)" % layout)
        self.provide_data = [DataDesc(name=self.data_name, shape=shape, layout=self.layout)]
        self.provide_label = [DataDesc(name=self.label_name, shape=shape, layout=self.layout)]

        self.idx = []
        for i, buck in enumerate(self.data):
            self.idx.extend([(i, j) for j in range(0, len(buck) - global_batch + 1, global_batch)])
        self.curr_idx = 0
        self.reset()

    def reset(self):
        """Shuffle the batches and the sentences in each bucket; start again."""
        self.curr_idx = 0
        self._py_random.shuffle(self.idx)
        # permutation + gather: the rows and the RNG draws of shuffle(), three times faster
        self.data = [buck[self._np_random.permutation(len(buck))] for buck in self.data]
        self._labels = []
        for buck in self.data:
            label = np.empty_like(buck)
            label[:, :-1] = buck[:, 1:]
            label[:, -1] = self.invalid_label
            self._labels.append(label)

    # Batches are cut from the host arrays and only they go to the device, so nothing
    # waits for whole buckets to be copied (or for a slicing program to compile).
    @property
    def nddata(self) -> list:
        """This epoch's shuffled data, one NDArray per bucket (MXNet's attribute)."""
        return [_nd_array(d, dtype=self.dtype) for d in self.data]

    @property
    def ndlabel(self) -> list:
        """This epoch's labels, one NDArray per bucket (MXNet's attribute)."""
        return [_nd_array(lab, dtype=self.dtype) for lab in self._labels]

    def upcoming_buckets(self, limit=None) -> list:
        """Bucket keys of this epoch's remaining batches (the next `limit` of them), in the
        order they first come (jbind extension: BucketingModule.fit compiles in this order)."""
        rest = self.idx[self.curr_idx:] if limit is None else self.idx[self.curr_idx:self.curr_idx + limit]
        return list(dict.fromkeys(self.buckets[i] for i, _ in rest))

    def next(self):
        """The next batch, with its bucket_key and provide_data/provide_label."""
        if self.curr_idx == len(self.idx):
            raise StopIteration
        i, j = self.idx[self.curr_idx]
        j += self.part_index * self.batch_size  # this worker's rows of the global batch
        self.curr_idx += 1
        # A device array may alias the host rows (CPU): reset() makes new arrays, never
        # writing to the ones batches came from.
        data = self.data[i][j:j + self.batch_size]
        label = self._labels[i][j:j + self.batch_size]
        if self.major_axis == 1:
            data, label = data.T, label.T
        data, label = _nd_array(data, dtype=self.dtype), _nd_array(label, dtype=self.dtype)
        return DataBatch([data], [label], pad=0, bucket_key=self.buckets[i],
                         provide_data=[DataDesc(self.data_name, data.shape, layout=self.layout)],
                         provide_label=[DataDesc(self.label_name, label.shape, layout=self.layout)])
