"""Golden cases for CTCLoss (MXNet 1.9.1 reference), in zoo_cases.py's format.

Every argument is drawn from its spec, so each case draws labels that are valid for its
convention: with blank_label='first' a label ends at its first 0 (drawn from 0..C-1), with
'last' at its first -1 (drawn from -1..C-2); with use_label_lengths the labels hold no
padding value and the lengths say where they end. Some draws give a label that cannot
fit its sequence (MXNet: loss 0, zero gradient). Lengths, labels: grad_req 'null'.
"""
import numpy as np  # noqa: F401  (kept so the module's only import is numpy)

T, N, C, L = 6, 3, 5, 3
NULL = {"label": "null", "dlen": "null", "llen": "null"}


def op_cases(mx):
    S = mx.sym
    x, lab, dlen, llen = S.Variable("x"), S.Variable("label"), S.Variable("dlen"), S.Variable("llen")
    shapes = {"x": (T, N, C), "label": (N, L)}
    first, last = ("int", 0, C), ("int", -1, C - 1)
    cases = []

    def add(name, sym, inputs, extra=(), **kw):
        sh = dict(shapes, **{k: (N,) for k in extra})
        cases.append(dict(name=name, sym=sym, shapes=sh, inputs=inputs, grad_req=NULL, **kw))

    add("ctc_first", S.CTCLoss(x, lab, name="ctc"), {"label": first})
    add("ctc_last", S.CTCLoss(x, lab, blank_label="last", name="ctc"), {"label": last})
    add("ctc_first_data_lengths", S.ctc_loss(x, lab, dlen, use_data_lengths=True, name="ctc"),
        {"label": first, "dlen": ("int", 2, T + 1)}, extra=("dlen",))
    add("ctc_last_data_lengths", S.CTCLoss(x, lab, dlen, use_data_lengths=True, blank_label="last", name="ctc"),
        {"label": last, "dlen": ("int", 3, T + 1)}, extra=("dlen",))
    add("ctc_first_label_lengths", S.CTCLoss(x, lab, label_lengths=llen, use_label_lengths=True, name="ctc"),
        {"label": ("int", 1, C), "llen": ("int", 0, L + 1)}, extra=("llen",))
    add("ctc_last_label_lengths", S.CTCLoss(x, lab, label_lengths=llen, use_label_lengths=True, blank_label="last",
                                                       name="ctc"),
        {"label": ("int", 0, C - 1), "llen": ("int", 0, L + 1)}, extra=("llen",))
    add("ctc_last_both_lengths", S.ctc_loss(x, lab, dlen, llen, use_data_lengths=True, use_label_lengths=True,
                                            blank_label="last", name="ctc"),
        {"label": ("int", 0, C - 1), "dlen": ("int", 2, T + 1), "llen": ("int", 1, L + 1)},
        extra=("dlen", "llen"))
    # all-repeat labels (1, 1, 1) need 5 steps: shorter sequences cannot fit them (loss 0, zero gradient)
    add("ctc_repeats_infeasible", S.CTCLoss(x, lab, dlen, use_data_lengths=True, name="ctc"),
        {"label": ("int", 1, 2), "dlen": ("int", 3, T + 1)}, extra=("dlen",))
    # the usual training head: activations from a layer, the loss under MakeLoss (no head gradient)
    fc = S.FullyConnected(x, num_hidden=C, flatten=False, name="fc")
    add("ctc_fc_makeloss", S.MakeLoss(S.CTCLoss(fc, lab, name="ctc"), name="loss"), {"label": first},
        head_grads=False)
    return cases


def all_cases(mx):
    return op_cases(mx)
