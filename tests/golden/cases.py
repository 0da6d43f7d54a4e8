"""Golden test cases shared by MXNet (reference generator) and jbind (tests).

Every function takes the library module ``mx`` as a parameter, so the exact same
code builds the symbols with real MXNet 1.9.1 (``tests/golden/make_golden.py``)
and with jbind (``tests/test_golden.py``).  This file imports nothing but numpy
and must stay that way.

Op case dict keys
-----------------
name        unique, filename-safe case name (also the .npz file name)
sym         the Symbol (every op has an explicit ``name=``; symbols built with
            Python operators are created inside a fresh ``mx.name.NameManager()``
            so the auto names are deterministic, e.g. ``_plusscalar0``)
shapes      dict input name -> shape, passed to ``simple_bind``
inputs      optional dict input name -> spec, spec is
              ("uniform", lo, hi)  float32 uniform in [lo, hi)
              ("int", lo, hi)      integer-valued float32 in [lo, hi) (hi exclusive)
            inputs not listed get ("uniform", -1, 1)
is_train    optional, default True
grad_req    optional, 'write' / 'null' / dict name -> req.  A dict only lists the
            exceptions: arguments not in it get 'write'.  Both the generator and
            the test expand it to a full dict over ``list_arguments()``.
head_grads  optional, default True: backward gets random out_grads.  False for
            loss heads (SoftmaxOutput, *RegressionOutput, MakeLoss), whose
            backward is called without out_grads.
            (the generated .npz files record "argafter:<name>" for arguments that
            MXNet modifies in place, e.g. BatchNorm fix_gamma=True sets gamma to 1
            during a training forward)
rtol, atol  optional tolerances (test default rtol=1e-4, atol=1e-5)
"""
import numpy as np  # noqa: F401  (kept so the module's only import is numpy)

POS = ("uniform", 0.5, 2.0)


def _auto(mx, fn):
    """Build ``fn()`` inside a fresh NameManager so auto names start at 0."""
    with mx.name.NameManager():
        return fn()


def op_cases(mx):
    S = mx.sym
    V = S.Variable
    x = V("x")
    y = V("y")
    cases = []

    def add(name, sym, shapes, **kw):
        d = dict(name=name, sym=sym, shapes=shapes)
        d.update(kw)
        cases.append(d)

    # ---------------------------------------------------------------- FullyConnected
    add("fc_flatten", S.FullyConnected(x, num_hidden=5, name="fc"), {"x": (3, 2, 4)})
    add("fc_noflatten", S.FullyConnected(x, num_hidden=5, flatten=False, name="fc"),
        {"x": (2, 3, 4)})
    add("fc_nobias", S.FullyConnected(x, num_hidden=4, no_bias=True, name="fc"),
        {"x": (3, 6)})

    # ---------------------------------------------------------------- Embedding
    add("embedding", S.Embedding(x, input_dim=7, output_dim=3, name="emb"),
        {"x": (2, 4)}, inputs={"x": ("int", 0, 7)}, grad_req={"x": "null"})

    # ---------------------------------------------------------------- Activation
    for act in ("relu", "sigmoid", "tanh", "softrelu", "softsign"):
        add("activation_" + act, S.Activation(x, act_type=act, name="act"),
            {"x": (3, 5)})

    # ---------------------------------------------------------------- LeakyReLU
    add("leakyrelu_leaky", S.LeakyReLU(x, act_type="leaky", slope=0.1, name="lrelu"),
        {"x": (3, 5)})
    add("leakyrelu_elu", S.LeakyReLU(x, act_type="elu", slope=0.7, name="lrelu"),
        {"x": (3, 5)})
    add("leakyrelu_prelu", S.LeakyReLU(x, act_type="prelu", name="lrelu"),
        {"x": (2, 3, 4)})
    add("leakyrelu_selu", S.LeakyReLU(x, act_type="selu", name="lrelu"), {"x": (3, 5)})
    add("leakyrelu_gelu", S.LeakyReLU(x, act_type="gelu", name="lrelu"), {"x": (3, 5)})

    # ---------------------------------------------------------------- Reshape / Flatten
    add("reshape_0_m1", S.Reshape(x, shape=(0, -1), name="r"), {"x": (2, 3, 4)})
    # note: a plain value consumes exactly one input dim, so e.g. shape=(4, -2) on
    # (2, 2, 3, 2) infers (4, 2, 3, 2) in MXNet (size mismatch, fails at runtime)
    add("reshape_m3_m2", S.Reshape(x, shape=(-3, -2), name="r"), {"x": (2, 2, 3, 2)})
    add("reshape_plain_m2", S.Reshape(x, shape=(2, -2), name="r"), {"x": (2, 2, 3, 2)})
    add("reshape_m3", S.Reshape(x, shape=(-3, 0), name="r"), {"x": (2, 3, 4)})
    add("reshape_m4", S.Reshape(x, shape=(0, -4, 2, -1, 0), name="r"),
        {"x": (2, 6, 2)})
    add("reshape_reverse", S.Reshape(x, shape=(-1, 0), reverse=True, name="r"),
        {"x": (2, 3, 4)})
    add("flatten", S.Flatten(x, name="flat"), {"x": (2, 3, 2, 2)})

    # ---------------------------------------------------------------- Concat / SliceChannel
    add("concat_dim0", S.Concat(x, y, dim=0, name="cat"), {"x": (2, 3), "y": (4, 3)})
    add("concat_dim1", S.Concat(x, y, dim=1, name="cat"),
        {"x": (2, 3, 2), "y": (2, 1, 2)})
    add("slicechannel_axis1", S.SliceChannel(x, num_outputs=3, axis=1, name="sc"),
        {"x": (2, 6, 2)})
    add("slicechannel_squeeze", S.SliceChannel(x, num_outputs=3, axis=0,
                                               squeeze_axis=True, name="sc"),
        {"x": (3, 2, 4)})

    # ---------------------------------------------------------------- shape ops
    add("expand_dims", S.expand_dims(x, axis=1, name="ed"), {"x": (3, 4)})
    add("expand_dims_neg", S.expand_dims(x, axis=-1, name="ed"), {"x": (3, 4)})
    add("transpose_default", S.transpose(x, name="t"), {"x": (2, 3, 4)})
    add("transpose_axes", S.transpose(x, axes=(1, 2, 0), name="t"), {"x": (2, 3, 4)})
    add("swapaxis", S.SwapAxis(x, dim1=0, dim2=2, name="sw"), {"x": (2, 3, 4)})
    add("slice_axis", S.slice_axis(x, axis=1, begin=1, end=3, name="sl"),
        {"x": (2, 5, 2)})
    add("slice_axis_end_none", S.slice_axis(x, axis=0, begin=2, end=None, name="sl"),
        {"x": (5, 3)})
    add("slice_axis_neg_begin", S.slice_axis(x, axis=-1, begin=-3, end=-1, name="sl"),
        {"x": (2, 3, 5)})

    # ---------------------------------------------------------------- take / where / clip / Cast
    idx = V("idx")
    add("take_axis0", S.take(x, idx, axis=0, name="take"), {"x": (5, 3), "idx": (2, 3)},
        inputs={"idx": ("int", 0, 5)}, grad_req={"idx": "null"})
    add("take_axis1_clip", S.take(x, idx, axis=1, mode="clip", name="take"),
        {"x": (2, 4, 3), "idx": (5,)},
        inputs={"idx": ("int", -2, 7)}, grad_req={"idx": "null"})
    cond = V("cond")
    add("where", S.where(cond, x, y, name="where"),
        {"cond": (3, 4), "x": (3, 4), "y": (3, 4)},
        inputs={"cond": ("int", 0, 2)}, grad_req={"cond": "null"})
    add("clip", S.clip(x, a_min=-0.5, a_max=0.4, name="clip"), {"x": (4, 5)})
    add("cast_float16", S.Cast(x, dtype="float16", name="cast"), {"x": (3, 4)},
        rtol=2e-3, atol=2e-3)

    # ---------------------------------------------------------------- elementwise binary
    add("elemwise_add", S.elemwise_add(x, y, name="ew"), {"x": (3, 4), "y": (3, 4)})
    add("elemwise_sub", S.elemwise_sub(x, y, name="ew"), {"x": (3, 4), "y": (3, 4)})
    add("elemwise_mul", S.elemwise_mul(x, y, name="ew"), {"x": (3, 4), "y": (3, 4)})
    add("elemwise_div", S.elemwise_div(x, y, name="ew"), {"x": (3, 4), "y": (3, 4)},
        inputs={"y": POS})

    # ---------------------------------------------------------------- scalar ops via Python operators
    add("plus_scalar", _auto(mx, lambda: x + 2.0), {"x": (3, 4)})
    add("rplus_scalar", _auto(mx, lambda: 2.0 + x), {"x": (3, 4)})
    add("minus_scalar", _auto(mx, lambda: x - 1.5), {"x": (3, 4)})
    add("rminus_scalar", _auto(mx, lambda: 3.0 - x), {"x": (3, 4)})
    add("mul_scalar", _auto(mx, lambda: x * 2.5), {"x": (3, 4)})
    add("div_scalar", _auto(mx, lambda: x / 4.0), {"x": (3, 4)})
    add("rdiv_scalar", _auto(mx, lambda: 3.0 / x), {"x": (3, 4)}, inputs={"x": POS})
    add("power_scalar", _auto(mx, lambda: x ** 2.0), {"x": (3, 4)})
    add("power_scalar_3", _auto(mx, lambda: x ** 3.0), {"x": (3, 4)})
    add("rpower_scalar", _auto(mx, lambda: 2.0 ** x), {"x": (3, 4)})
    add("negative_op", _auto(mx, lambda: -x), {"x": (3, 4)})
    add("power_sym", _auto(mx, lambda: x ** y), {"x": (3, 4), "y": (3, 4)},
        inputs={"x": POS})
    add("arith_chain", _auto(mx, lambda: (x + y) * x - y / 2.0 + 1.0),
        {"x": (3, 4), "y": (3, 4)})

    # ---------------------------------------------------------------- broadcast binary
    bshapes = {"x": (2, 3, 4), "y": (1, 3, 1)}
    for op in ("add", "sub", "mul", "maximum", "minimum"):
        add("broadcast_" + op, getattr(S, "broadcast_" + op)(x, y, name="b"), bshapes)
    add("broadcast_div", S.broadcast_div(x, y, name="b"), bshapes, inputs={"y": POS})
    add("broadcast_power", S.broadcast_power(x, y, name="b"), bshapes,
        inputs={"x": POS})

    # ---------------------------------------------------------------- reductions
    for op in ("sum", "mean", "max", "min"):
        f = getattr(S, op)
        add(op + "_axis", f(x, axis=1, name="red"), {"x": (2, 3, 4)})
        add(op + "_axes_keepdims", f(x, axis=(0, 2), keepdims=True, name="red"),
            {"x": (2, 3, 4)})
        add(op + "_all", f(x, name="red"), {"x": (2, 3, 4)})
    add("sum_exclude", S.sum(x, axis=1, exclude=True, name="red"), {"x": (2, 3, 4)})
    add("mean_exclude_keepdims", S.mean(x, axis=(0,), exclude=True, keepdims=True,
                                        name="red"), {"x": (2, 3, 4)})

    # ---------------------------------------------------------------- dot / batch_dot
    add("dot", S.dot(x, y, name="dot"), {"x": (3, 4), "y": (4, 2)})
    add("dot_transpose_a", S.dot(x, y, transpose_a=True, name="dot"),
        {"x": (4, 3), "y": (4, 2)})
    add("dot_transpose_b", S.dot(x, y, transpose_b=True, name="dot"),
        {"x": (3, 4), "y": (2, 4)})
    add("batch_dot", S.batch_dot(x, y, name="bdot"), {"x": (2, 3, 4), "y": (2, 4, 5)})
    add("batch_dot_tb", S.batch_dot(x, y, transpose_b=True, name="bdot"),
        {"x": (2, 3, 4), "y": (2, 5, 4)})

    # ---------------------------------------------------------------- unary math
    for op in ("exp", "square", "abs", "negative", "sigmoid", "tanh", "relu"):
        add("unary_" + op, getattr(S, op)(x, name="u"), {"x": (3, 4)})
    for op in ("log", "sqrt"):
        add("unary_" + op, getattr(S, op)(x, name="u"), {"x": (3, 4)}, inputs={"x": POS})

    # ---------------------------------------------------------------- softmax family
    add("softmax_default", S.softmax(x, name="sm"), {"x": (3, 5)})
    add("softmax_axis0_temp", S.softmax(x, axis=0, temperature=2.0, name="sm"),
        {"x": (3, 4, 2)})
    add("log_softmax", S.log_softmax(x, name="lsm"), {"x": (3, 5)})
    add("log_softmax_axis1", S.log_softmax(x, axis=1, name="lsm"), {"x": (2, 3, 4)})
    add("softmaxactivation_instance", S.SoftmaxActivation(x, name="sa"), {"x": (3, 5)})
    add("softmaxactivation_channel", S.SoftmaxActivation(x, mode="channel", name="sa"),
        {"x": (2, 3, 4)})

    # ---------------------------------------------------------------- loss heads
    lab = V("label")
    add("softmaxoutput", S.SoftmaxOutput(x, lab, name="so"), {"x": (4, 5), "label": (4,)},
        inputs={"label": ("int", 0, 5)}, grad_req={"label": "null"}, head_grads=False)
    add("softmaxoutput_multi", S.SoftmaxOutput(x, lab, multi_output=True, name="so"),
        {"x": (2, 4, 3), "label": (2, 3)},
        inputs={"label": ("int", 0, 4)}, grad_req={"label": "null"}, head_grads=False)
    add("softmaxoutput_ignore_null",
        S.SoftmaxOutput(x, lab, use_ignore=True, ignore_label=1, name="so"),
        {"x": (6, 4), "label": (6,)},
        inputs={"label": ("int", 0, 4)}, grad_req={"label": "null"}, head_grads=False)
    add("softmaxoutput_batch_norm",
        S.SoftmaxOutput(x, lab, normalization="batch", grad_scale=2.0, name="so"),
        {"x": (4, 5), "label": (4,)},
        inputs={"label": ("int", 0, 5)}, grad_req={"label": "null"}, head_grads=False)
    add("softmaxoutput_valid_ignore",
        S.SoftmaxOutput(x, lab, use_ignore=True, ignore_label=2, normalization="valid",
                        name="so"),
        {"x": (6, 4), "label": (6,)},
        inputs={"label": ("int", 0, 4)}, grad_req={"label": "null"}, head_grads=False)
    add("softmaxoutput_multi_valid",
        S.SoftmaxOutput(x, lab, multi_output=True, use_ignore=True, ignore_label=2,
                        normalization="valid", grad_scale=0.5, name="so"),
        {"x": (2, 4, 3), "label": (2, 3)},
        inputs={"label": ("int", 0, 4)}, grad_req={"label": "null"}, head_grads=False)
    add("softmaxoutput_preserve_shape",
        S.SoftmaxOutput(x, lab, preserve_shape=True, name="so"),
        {"x": (2, 3, 4), "label": (2, 3)},
        inputs={"label": ("int", 0, 4)}, grad_req={"label": "null"}, head_grads=False)
    add("linearregressionoutput", S.LinearRegressionOutput(x, lab, name="lro"),
        {"x": (4, 3), "label": (4, 3)}, grad_req={"label": "null"}, head_grads=False)
    add("linearregressionoutput_scale",
        S.LinearRegressionOutput(x, lab, grad_scale=3.0, name="lro"),
        {"x": (4, 3), "label": (4, 3)}, grad_req={"label": "null"}, head_grads=False)
    add("logisticregressionoutput", S.LogisticRegressionOutput(x, lab, name="lgo"),
        {"x": (4, 3), "label": (4, 3)}, inputs={"label": ("int", 0, 2)},
        grad_req={"label": "null"}, head_grads=False)
    add("maeregressionoutput", S.MAERegressionOutput(x, lab, name="mae"),
        {"x": (4, 3), "label": (4, 3)}, grad_req={"label": "null"}, head_grads=False)
    add("makeloss", S.MakeLoss(x, name="ml"), {"x": (3, 4)}, head_grads=False)
    add("makeloss_scale_batch",
        S.MakeLoss(x, grad_scale=2.0, normalization="batch", name="ml"),
        {"x": (3, 4)}, head_grads=False)
    add("makeloss_valid",
        S.MakeLoss(S.relu(x, name="r"), normalization="valid", name="ml"),
        {"x": (3, 4)}, head_grads=False)
    add("makeloss_of_expr",
        S.MakeLoss(S.square(S.elemwise_sub(x, y, name="d"), name="sq"), grad_scale=0.5,
                   name="ml"),
        {"x": (3, 4), "y": (3, 4)}, head_grads=False)

    # ---------------------------------------------------------------- BlockGrad / Dropout
    add("blockgrad", S.elemwise_mul(S.BlockGrad(x, name="bg"), y, name="m"),
        {"x": (3, 4), "y": (3, 4)})
    add("dropout_inference", S.Dropout(x, p=0.5, name="drop"), {"x": (3, 4)},
        is_train=False)

    # ---------------------------------------------------------------- BatchNorm
    add("batchnorm_fix_gamma", S.BatchNorm(x, name="bn"), {"x": (4, 3, 2)})
    add("batchnorm_free_gamma", S.BatchNorm(x, fix_gamma=False, momentum=0.8, eps=1e-3,
                                            name="bn"), {"x": (4, 3, 2, 2)})
    add("batchnorm_global_stats", S.BatchNorm(x, fix_gamma=False, use_global_stats=True,
                                              name="bn"), {"x": (4, 3, 2)})
    add("batchnorm_inference", S.BatchNorm(x, fix_gamma=False, name="bn"),
        {"x": (4, 3, 2)}, is_train=False)
    add("batchnorm_inference_fix_gamma", S.BatchNorm(x, name="bn"),
        {"x": (4, 3, 2)}, is_train=False)
    add("batchnorm_2d", S.BatchNorm(x, fix_gamma=False, name="bn"), {"x": (6, 4)})

    # ---------------------------------------------------------------- Sequence ops (T, N, ...)
    sl = V("seqlen")
    add("sequencemask", S.SequenceMask(x, sl, use_sequence_length=True, value=-1.0,
                                       name="smask"),
        {"x": (4, 3, 2), "seqlen": (3,)}, inputs={"seqlen": ("int", 1, 5)},
        grad_req={"seqlen": "null"})
    add("sequencemask_nolen", S.SequenceMask(x, name="smask"), {"x": (4, 3, 2)})
    add("sequencelast", S.SequenceLast(x, sl, use_sequence_length=True, name="slast"),
        {"x": (4, 3, 2), "seqlen": (3,)}, inputs={"seqlen": ("int", 1, 5)},
        grad_req={"seqlen": "null"})
    add("sequencelast_nolen", S.SequenceLast(x, name="slast"), {"x": (4, 3, 2)})
    add("sequencereverse", S.SequenceReverse(x, sl, use_sequence_length=True,
                                             name="srev"),
        {"x": (4, 3, 2), "seqlen": (3,)}, inputs={"seqlen": ("int", 1, 5)},
        grad_req={"seqlen": "null"})
    add("sequencereverse_nolen", S.SequenceReverse(x, name="srev"), {"x": (4, 3, 2)})

    # ---------------------------------------------------------------- misc
    add("zeros_like", S.elemwise_add(S.zeros_like(x, name="z"), y, name="s"),
        {"x": (3, 4), "y": (3, 4)})
    add("ones_like", S.elemwise_mul(S.ones_like(x, name="o"), y, name="m"),
        {"x": (3, 4), "y": (3, 4)})
    add("identity", S.identity(x, name="id"), {"x": (3, 4)})

    # ---------------------------------------------------------------- small composite
    def _mlp():
        h = S.FullyConnected(x, num_hidden=6, name="fc1")
        h = S.Activation(h, act_type="tanh", name="act1")
        h = S.FullyConnected(h, num_hidden=3, name="fc2")
        return S.SoftmaxOutput(h, lab, name="softmax")
    add("mlp_softmax", _mlp(), {"x": (4, 5), "label": (4,)},
        inputs={"label": ("int", 0, 3)}, grad_req={"label": "null"}, head_grads=False)

    names = [c["name"] for c in cases]
    assert len(names) == len(set(names)), "duplicate case names"
    return cases


# ==================================================================== graph cases

def graph_cases(mx):
    S = mx.sym
    V = S.Variable
    g = {}

    # MLP with auto-named layers
    with mx.name.NameManager():
        data = V("data")
        h = S.FullyConnected(data, num_hidden=8)
        h = S.Activation(h, act_type="relu")
        h = S.FullyConnected(h, num_hidden=4)
        g["mlp_auto"] = S.SoftmaxOutput(h)

    # MLP with explicit names
    data = V("data")
    h = S.FullyConnected(data, num_hidden=8, name="fc1")
    h = S.Activation(h, act_type="relu", name="relu1")
    h = S.FullyConnected(h, num_hidden=4, name="fc2")
    g["mlp_named"] = S.SoftmaxOutput(h, name="softmax")

    # Prefix name manager (explicit and auto names both get the prefix)
    with mx.name.Prefix("p_"):
        data = V("data")
        h = S.FullyConnected(data, num_hidden=8, name="fc1")
        h = S.Activation(h, act_type="relu")
        h = S.FullyConnected(h, num_hidden=4)
        g["prefix"] = S.SoftmaxOutput(h, name="softmax")

    # Arithmetic on variables, auto names
    with mx.name.NameManager():
        a = V("a")
        b = V("b")
        g["arith"] = S.Group([a + b, a * 2, -a, a ** b, a - b, a / b, 1.0 - a, a * b])

    # SliceChannel with 3 outputs, and Group of two symbols
    data = V("data")
    sc = S.SliceChannel(data, num_outputs=3, axis=1, name="slice")
    g["slicechannel"] = sc
    g["slice_group"] = S.Group([sc[0], S.elemwise_add(sc[1], sc[2], name="add12")])
    g["group_two"] = S.Group([S.FullyConnected(data, num_hidden=3, name="fc"),
                              S.Activation(data, act_type="relu", name="act")])

    # BatchNorm net (aux states)
    with mx.name.NameManager():
        data = V("data")
        h = S.BatchNorm(data, fix_gamma=False, name="bn1")
        h = S.Activation(h, act_type="relu", name="relu")
        h = S.Flatten(h, name="flat")
        h = S.FullyConnected(h, num_hidden=5, name="fc")
        h = S.BatchNorm(h, name="bn2")
        g["batchnorm_net"] = S.SoftmaxOutput(h, name="softmax")

    # Hand-written LSTM step, unrolled 2 steps, weights shared across steps
    def lstm_unrolled():
        nh = 4
        i2h_w, i2h_b = V("l0_i2h_weight"), V("l0_i2h_bias")
        h2h_w, h2h_b = V("l0_h2h_weight"), V("l0_h2h_bias")
        h = V("l0_init_h")
        c = V("l0_init_c")
        outs = []
        for t in range(2):
            xt = V("x%d" % t)
            i2h = S.FullyConnected(xt, weight=i2h_w, bias=i2h_b, num_hidden=4 * nh,
                                   name="t%d_i2h" % t)
            h2h = S.FullyConnected(h, weight=h2h_w, bias=h2h_b, num_hidden=4 * nh,
                                   name="t%d_h2h" % t)
            gates = i2h + h2h
            sl = S.SliceChannel(gates, num_outputs=4, name="t%d_slice" % t)
            in_gate = S.Activation(sl[0], act_type="sigmoid", name="t%d_i" % t)
            in_tr = S.Activation(sl[1], act_type="tanh", name="t%d_c" % t)
            forget = S.Activation(sl[2], act_type="sigmoid", name="t%d_f" % t)
            out_gate = S.Activation(sl[3], act_type="sigmoid", name="t%d_o" % t)
            c = forget * c + in_gate * in_tr
            h = out_gate * S.Activation(c, act_type="tanh", name="t%d_state" % t)
            outs.append(h)
        return S.Group(outs + [c])
    g["lstm2"] = _auto(mx, lstm_unrolled)

    # Variable with attributes.  init is given as the string MXNet's
    # mx.init.Xavier().dumps() produces, so jbind needs no mx.init for this.
    w = V("w", shape=(4, 3), dtype="float32", lr_mult=2.0, wd_mult=0.5,
          init='["xavier", {"rnd_type": "uniform", "factor_type": "avg", '
               '"magnitude": 3}]')
    g["var_attrs"] = w
    data = V("data")
    g["var_attrs_fc"] = S.FullyConnected(data, weight=w, num_hidden=4, no_bias=True,
                                         name="fc")
    return g


# kwargs for infer_shape per graph case (graphs not listed: infer_shape not checked)
GRAPH_SHAPES = {
    "mlp_auto": {"data": (2, 5)},
    "mlp_named": {"data": (2, 5)},
    "prefix": {"data": (2, 5)},
    "arith": {"a": (2, 3), "b": (2, 3)},
    "slicechannel": {"data": (2, 6, 2)},
    "slice_group": {"data": (2, 6, 2)},
    "group_two": {"data": (2, 6)},
    "batchnorm_net": {"data": (2, 3, 5, 5)},
    "lstm2": {"x0": (2, 3), "x1": (2, 3), "l0_init_h": (2, 4), "l0_init_c": (2, 4)},
    "var_attrs": {},
    "var_attrs_fc": {"data": (2, 3)},
}


# ==================================================================== error cases

def error_cases(mx):
    """name -> zero-argument callable that must raise in MXNet."""
    S = mx.sym
    V = S.Variable

    def bad_fc_weight():
        fc = S.FullyConnected(V("data"), num_hidden=3, name="fc")
        return fc.infer_shape(data=(2, 5), fc_weight=(4, 5))

    # note: MXNet 1.9.1 does NOT reject Reshape(shape=(4, 4)) or (3, -1) on (2, 5)
    # (no total-size check; it infers (4, 4) / (3, 3)); a -4 split that does not
    # divide the dim is rejected.
    def bad_reshape():
        r = S.Reshape(V("data"), shape=(2, -4, 2, 2), name="r")
        return r.infer_shape(data=(2, 5))

    def unknown_param():
        return S.FullyConnected(V("data"), num_hiden=3, name="fc")

    def bad_elemwise():
        s = S.elemwise_add(V("a"), V("b"), name="add")
        return s.infer_shape(a=(2, 3), b=(3, 2))

    return {
        "infer_shape_fc_weight": bad_fc_weight,
        "reshape_impossible": bad_reshape,
        "unknown_param": unknown_param,
        "elemwise_shape_mismatch": bad_elemwise,
    }
