"""CTCLoss: Connectionist Temporal Classification loss, MXNet 1.x's conventions on optax.ctc_loss.

data is time-major (T, N, C) unnormalized activations, label (N, L). With
`blank_label='first'` the blank is class 0 and a label ends at its first 0; with 'last'
the blank is class C-1 and a label ends at its first -1. `use_data_lengths` /
`use_label_lengths` add (N,) length inputs instead. Labels and lengths are truncated to
int, as MXNet casts them; lengths are clipped to [0, T] and [0, L]. As in MXNet, an
example whose label cannot fit its sequence (label length plus repeats > data length)
costs 0 and gets a zero gradient, and steps past a data length get a zero gradient.

The gradient is the math gradient of the per-example loss times the head gradient, as
MXNet's backward (the gradient computed in forward, scaled per example by the head
gradient): CTCLoss is not a loss head, so backward needs out_grads (or a MakeLoss on top).
Label values outside the alphabet (undefined in MXNet) give an unspecified loss.
"""
from __future__ import annotations

from typing import Literal

import jax
import jax.numpy as jnp

from ._base import Op, register


def _batch_check(what, shape, batch):
    if shape is None:
        return (batch,) if batch else None
    if len(shape) != 1:
        raise ValueError(f"{what} must be a vector (batch,), got shape {tuple(shape)}")
    if batch and shape[0] and shape[0] != batch:
        raise ValueError(f"the batch size of {what} {tuple(shape)} must equal the data's, {batch}")
    return tuple(shape)


@register(aliases=("ctc_loss", "_contrib_CTCLoss", "_contrib_ctc_loss", "_npx_ctc_loss"))
class CTCLoss(Op):
    """Per-example CTC loss, shape (batch,), of activations (T, batch, alphabet) and padded labels."""
    use_data_lengths: bool = False
    use_label_lengths: bool = False
    blank_label: Literal["first", "last"] = "first"

    def arguments(self):
        return ("data", "label") + ("data_lengths",) * self.use_data_lengths + \
            ("label_lengths",) * self.use_label_lengths

    def outputs(self):
        return ("output0",)

    def total_outputs(self):
        return 2  # MXNet's hidden second output holds the gradient computed in forward

    def infer_shape(self, ins, outs):
        data, label, *lengths = ins
        if data is not None and len(data) != 3:
            raise ValueError(f"data must be 3-D (sequence_length, batch, alphabet), got shape {tuple(data)}")
        if label is not None and len(label) != 2:
            raise ValueError(f"label must be 2-D (batch, label_length), got shape {tuple(label)}")
        batch = (data[1] if data is not None else 0) or (label[0] if label is not None else 0) or \
            (outs[0][0] if outs[0] is not None else 0)
        if data is not None and label is not None:
            if data[1] and label[0] and data[1] != label[0]:
                raise ValueError(f"the batch size of label {tuple(label)} must equal the data's "
                                 f"{tuple(data)} (axis 1)")
            if data[0] and label[1] and label[1] > data[0]:
                raise ValueError(f"label {tuple(label)} is longer ({label[1]}) than the sequence of data "
                                 f"{tuple(data)} ({data[0]} steps)")
        names = ["data_lengths"] * self.use_data_lengths + ["label_lengths"] * self.use_label_lengths
        lengths = [_batch_check(n, s, batch) for n, s in zip(names, lengths)]
        return [data, label, *lengths], [(batch,) if batch else None], []

    def infer_type(self, ins, outs):
        t = ins[0] if ins[0] is not None else outs[0]
        return [t] + [s if s is not None else t for s in ins[1:]], [t], []

    def lower(self, ins, aux, is_train, key):
        data, label, *lengths = ins
        steps, batch, alphabet = data.shape
        width = label.shape[1]
        lab = label.astype(jnp.int32)
        if self.use_data_lengths:
            data_len = jnp.clip(lengths.pop(0).astype(jnp.int32), 0, steps)
        else:
            data_len = jnp.full((batch,), steps, jnp.int32)
        if self.use_label_lengths:
            label_len = jnp.clip(lengths.pop(0).astype(jnp.int32), 0, width)
        else:
            pad = lab == (0 if self.blank_label == "first" else -1)
            label_len = jnp.where(pad.any(axis=1), jnp.argmax(pad, axis=1), width)
        label_pad = jnp.arange(width)[None, :] >= label_len[:, None]
        # -1 past the end: one-hot zero, never equal to a real label, so no false repeat
        lab = jnp.where(label_pad, -1, lab)
        repeats = jnp.sum((lab[:, 1:] == lab[:, :-1]) & ~label_pad[:, 1:], axis=1)
        feasible = label_len + repeats <= data_len

        dtype = jnp.promote_types(data.dtype, jnp.float32)
        logits = jnp.swapaxes(data, 0, 1).astype(dtype)
        past = jnp.arange(steps)[None, :] >= data_len[:, None]
        logit_pad = past.astype(dtype)
        # steps past a data length never count, whatever they hold (MXNet's tests put NaN there)
        logits = jnp.where(past[..., None], 0, logits)
        blank = 0 if self.blank_label == "first" else alphabet - 1
        import optax  # here, not at import: optax's import is a quarter of jbind's
        with jax.enable_x64(dtype == jnp.float64):  # optax's one-hot has no dtype: float32 stays float32
            loss = optax.ctc_loss(logits, logit_pad, lab, label_pad.astype(dtype), blank_id=blank)
        return [jnp.where(feasible, loss, 0).astype(data.dtype)], aux
