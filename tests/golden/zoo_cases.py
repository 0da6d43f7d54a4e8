"""Golden cases for the layer ops and small model-zoo symbols (MXNet 1.9.1 reference).

Like cases.py, every function takes the library module ``mx`` and imports nothing but
numpy, so the same code builds the symbols with MXNet (``make_zoo_golden.py``) and with
jbind (``tests/test_zoo_golden.py``). Case keys: name, sym, shapes, and optionally
inputs (name -> ("uniform", lo, hi)), is_train (default True: a training forward and a
backward after the inference forward), head_grads (default True; False for loss heads),
grad_req (name -> req, the rest 'write'), native (run MXNet without MKLDNN).
The models follow MXNet's example/image-classification/symbols, shrunk.
"""
import numpy as np  # noqa: F401  (kept so the module's only import is numpy)

POS = ("uniform", 0.5, 2.0)


def op_cases(mx):
    S = mx.sym
    x, y = S.Variable("x"), S.Variable("y")
    cases = []

    def add(name, sym, shapes, **kw):
        cases.append(dict(name=name, sym=sym, shapes=shapes, **kw))

    # ------------------------------------------------------------ Convolution
    add("conv1d", S.Convolution(x, kernel=(3,), stride=(2,), pad=(1,), num_filter=4, name="conv"),
        {"x": (2, 3, 9)})
    add("conv2d", S.Convolution(x, kernel=(3, 2), stride=(2, 1), pad=(1, 0), dilate=(1, 2),
                                num_filter=4, name="conv"), {"x": (2, 3, 7, 6)})
    add("conv2d_group_nobias", S.Convolution(x, kernel=(3, 3), num_group=2, num_filter=6, no_bias=True,
                                             name="conv"), {"x": (2, 4, 5, 5)})
    add("conv2d_depthwise", S.Convolution(x, kernel=(3, 3), pad=(1, 1), num_group=4, num_filter=4,
                                          name="conv"), {"x": (1, 4, 4, 4)})
    add("conv3d", S.Convolution(x, kernel=(2, 3, 3), stride=(1, 2, 1), pad=(0, 1, 1), num_filter=3,
                                name="conv"), {"x": (1, 2, 4, 5, 4)})
    # ------------------------------------------------------------ Deconvolution
    add("deconv2d", S.Deconvolution(x, kernel=(3, 3), stride=(2, 2), pad=(1, 1), adj=(1, 1),
                                    num_filter=4, no_bias=False, name="deconv"), {"x": (2, 3, 4, 4)})
    add("deconv2d_group_dilate", S.Deconvolution(x, kernel=(2, 3), stride=(2, 1), dilate=(1, 2),
                                                 num_group=2, num_filter=6, name="deconv"),
        {"x": (2, 4, 3, 3)})
    add("deconv1d", S.Deconvolution(x, kernel=(4,), stride=(3,), pad=(1,), num_filter=3, name="deconv"),
        {"x": (2, 2, 5)})
    add("deconv2d_target_shape", S.Deconvolution(x, kernel=(3, 3), stride=(2, 2), target_shape=(8, 7),
                                                 num_filter=2, name="deconv"), {"x": (1, 2, 4, 4)},
        native=True)
    add("deconv3d", S.Deconvolution(x, kernel=(2, 2, 2), stride=(2, 1, 2), num_filter=2, no_bias=False,
                                    name="deconv"), {"x": (1, 2, 2, 3, 2)})
    # ------------------------------------------------------------ Pooling
    P = S.Pooling
    add("pool_max_valid", P(x, kernel=(3, 3), stride=(2, 2), name="pool"), {"x": (2, 2, 7, 6)})
    add("pool_max_full", P(x, kernel=(3, 3), stride=(2, 2), pooling_convention="full", name="pool"),
        {"x": (2, 2, 6, 6)})
    add("pool_max_pad", P(x, kernel=(3, 3), stride=(2, 2), pad=(1, 1), name="pool"), {"x": (1, 2, 5, 6)})
    add("pool_avg_valid_pad", P(x, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="avg", name="pool"),
        {"x": (1, 2, 5, 5)})
    add("pool_avg_exclude_pad", P(x, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="avg",
                                  count_include_pad=False, name="pool"), {"x": (1, 2, 5, 5)})
    add("pool_avg_full_pad", P(x, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="avg",
                               pooling_convention="full", name="pool"), {"x": (1, 2, 6, 6)})
    add("pool_avg_full_exclude", P(x, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="avg",
                                   pooling_convention="full", count_include_pad=False, name="pool"),
        {"x": (1, 2, 6, 6)})
    add("pool_avg_full_nopad", P(x, kernel=(2, 2), stride=(2, 2), pool_type="avg",
                                 pooling_convention="full", name="pool"), {"x": (1, 2, 5, 5)})
    add("pool_sum", P(x, kernel=(2, 3), stride=(1, 2), pool_type="sum", name="pool"), {"x": (2, 2, 4, 6)})
    add("pool_lp2", P(x, kernel=(2, 2), stride=(2, 2), pool_type="lp", p_value=2, name="pool"),
        {"x": (1, 2, 4, 4)}, inputs={"x": POS})
    add("pool_global_avg", P(x, kernel=(1, 1), global_pool=True, pool_type="avg", name="pool"),
        {"x": (2, 3, 4, 5)})
    add("pool_global_max", P(x, global_pool=True, kernel=(1, 1), name="pool"), {"x": (2, 3, 4, 5)})
    add("pool_1d_avg", P(x, kernel=(3,), stride=(2,), pad=(1,), pool_type="avg", name="pool"),
        {"x": (2, 2, 7)})
    add("pool_3d_max", P(x, kernel=(2, 2, 2), stride=(2, 1, 2), name="pool"), {"x": (1, 2, 4, 3, 4)})
    # 'same' runs in MXNet 1.9.1 only for 1-D data, with pad=(0, 0, 0) and without MKLDNN
    same = dict(pooling_convention="same", pad=(0, 0, 0), name="pool")
    add("pool_same_max_1d", P(x, kernel=(3,), stride=(2,), **same), {"x": (2, 2, 7)}, native=True)
    add("pool_same_avg_1d", P(x, kernel=(4,), stride=(3,), pool_type="avg", **same), {"x": (2, 2, 8)},
        native=True)
    add("pool_same_sum_1d", P(x, kernel=(3,), pool_type="sum", **same), {"x": (1, 2, 5)}, native=True)
    # ------------------------------------------------------------ normalization
    gamma = {"ln_gamma": POS, "in_gamma": POS, "bn_gamma": POS}
    add("instancenorm", S.InstanceNorm(x, eps=1e-3, name="in"), {"x": (2, 3, 4, 5)}, inputs=gamma)
    add("layernorm_last", S.LayerNorm(x, name="ln"), {"x": (3, 4, 5)}, inputs=gamma)
    add("layernorm_axis1_mean_var", S.LayerNorm(x, axis=1, eps=1e-3, output_mean_var=True, name="ln"),
        {"x": (3, 4, 2)}, inputs=gamma)
    for mode in ("instance", "channel", "spatial"):
        add("l2norm_" + mode, S.L2Normalization(x, mode=mode, name="l2"), {"x": (2, 3, 2, 2)})
    add("lrn3", S.LRN(x, nsize=3, name="lrn"), {"x": (2, 5, 3, 3)})
    add("lrn5", S.LRN(x, nsize=5, alpha=0.01, beta=0.5, knorm=1.0, name="lrn"), {"x": (1, 6, 2, 3)})
    add("batchnorm_axis_last", S.BatchNorm(x, axis=-1, fix_gamma=False, name="bn"), {"x": (4, 2, 3)},
        inputs=gamma)
    add("batchnorm_axis2_infer", S.BatchNorm(x, axis=2, fix_gamma=False, name="bn"), {"x": (3, 2, 4)},
        inputs=gamma, is_train=False)
    # ------------------------------------------------------------ UpSampling, Pad, Crop
    add("upsampling_nearest", S.UpSampling(x, scale=2, sample_type="nearest", num_args=1, name="up"),
        {"x": (2, 2, 3, 2)})
    add("upsampling_nearest_concat", S.UpSampling(x, y, scale=2, sample_type="nearest", num_args=2,
                                                  name="up"), {"x": (1, 2, 2, 2), "y": (1, 3, 4, 4)})
    add("upsampling_nearest_sum", S.UpSampling(x, y, scale=3, sample_type="nearest", num_args=2,
                                               multi_input_mode="sum", name="up"),
        {"x": (1, 2, 2, 2), "y": (1, 2, 3, 3)})
    add("upsampling_bilinear", S.UpSampling(x, scale=2, sample_type="bilinear", num_filter=2, num_args=1,
                                            name="up"), {"x": (1, 2, 3, 3)})
    for mode in ("constant", "edge", "reflect"):
        add("pad_" + mode, S.Pad(x, mode=mode, pad_width=(0, 0, 0, 0, 1, 2, 2, 1), constant_value=0.5,
                                 name="pad"), {"x": (1, 2, 3, 4)})
    add("pad_5d_reflect", S.Pad(x, mode="reflect", pad_width=(0, 0, 0, 0, 1, 1, 0, 1, 2, 0), name="pad"),
        {"x": (1, 1, 2, 3, 3)})
    add("crop_hw_offset", S.Crop(x, num_args=1, h_w=(2, 3), offset=(1, 2), name="crop"), {"x": (1, 2, 4, 6)})
    add("crop_center", S.Crop(x, num_args=1, h_w=(2, 3), center_crop=True, name="crop"), {"x": (2, 1, 5, 6)})
    add("crop_like", S.Crop(x, y, num_args=2, offset=(1, 1), name="crop"),
        {"x": (1, 2, 5, 5), "y": (1, 1, 3, 2)})
    return cases


# ---------------------------------------------------------------- models

def _conv_bn(S, data, name, num_filter, kernel=(3, 3), stride=(1, 1), pad=(1, 1)):
    conv = S.Convolution(data, num_filter=num_filter, kernel=kernel, stride=stride, pad=pad,
                         no_bias=True, name=name + "_conv")
    bn = S.BatchNorm(conv, fix_gamma=False, eps=2e-5, momentum=0.9, name=name + "_bn")
    return S.Activation(bn, act_type="relu", name=name + "_relu")


def _head(S, body, num_classes):
    pool = S.Pooling(body, global_pool=True, kernel=(2, 2), pool_type="avg", name="pool1")
    fc = S.FullyConnected(S.Flatten(pool, name="flat"), num_hidden=num_classes, name="fc1")
    return S.SoftmaxOutput(fc, name="softmax")


def lenet(mx):
    S = mx.sym
    data = S.Variable("data")
    c1 = S.Convolution(data, kernel=(5, 5), num_filter=4, name="conv1")
    p1 = S.Pooling(S.Activation(c1, act_type="tanh", name="tanh1"), pool_type="max", kernel=(2, 2),
                   stride=(2, 2), name="pool1")
    c2 = S.Convolution(p1, kernel=(3, 3), num_filter=6, name="conv2")
    p2 = S.Pooling(S.Activation(c2, act_type="tanh", name="tanh2"), pool_type="max", kernel=(2, 2),
                   stride=(2, 2), name="pool2")
    f1 = S.FullyConnected(S.Flatten(p2, name="flatten"), num_hidden=10, name="fc1")
    f2 = S.FullyConnected(S.Activation(f1, act_type="tanh", name="tanh3"), num_hidden=3, name="fc2")
    return S.SoftmaxOutput(f2, name="softmax")


def mlp(mx):
    S = mx.sym
    h = S.Variable("data")
    for i, n in enumerate((16, 8)):
        h = S.Activation(S.FullyConnected(h, num_hidden=n, name="fc%d" % (i + 1)), act_type="relu",
                         name="relu%d" % (i + 1))
    return S.SoftmaxOutput(S.FullyConnected(h, num_hidden=3, name="fc3"), name="softmax")


def vgg_block(mx):
    S = mx.sym
    h = S.Variable("data")
    for i, n in enumerate((4, 6)):
        h = S.Activation(S.Convolution(h, kernel=(3, 3), pad=(1, 1), num_filter=n, name="conv1_%d" % i),
                         act_type="relu", name="relu1_%d" % i)
    h = S.Pooling(h, pool_type="max", kernel=(2, 2), stride=(2, 2), name="pool1")
    h = S.Activation(S.FullyConnected(S.Flatten(h, name="flatten"), num_hidden=8, name="fc6"),
                     act_type="relu", name="relu6")
    h = S.Dropout(h, p=0.5, name="drop6")
    return S.SoftmaxOutput(S.FullyConnected(h, num_hidden=3, name="fc7"), name="softmax")


def resnet_v1_block(mx):
    """resnet-v1.py's basic residual unit: conv-bn-relu-conv-bn, projection shortcut, relu."""
    S = mx.sym
    data = S.Variable("data")
    body = _conv_bn(S, data, "stage1_unit1_a", 6, stride=(2, 2))
    conv2 = S.Convolution(body, num_filter=6, kernel=(3, 3), pad=(1, 1), no_bias=True,
                          name="stage1_unit1_conv2")
    bn2 = S.BatchNorm(conv2, fix_gamma=False, eps=2e-5, name="stage1_unit1_bn2")
    sc = S.Convolution(data, num_filter=6, kernel=(1, 1), stride=(2, 2), no_bias=True, name="stage1_unit1_sc")
    sc = S.BatchNorm(sc, fix_gamma=False, eps=2e-5, name="stage1_unit1_sc_bn")
    out = S.Activation(bn2 + sc, act_type="relu", name="stage1_unit1_relu")
    return _head(S, out, 3)


def resnet_v2_block(mx):
    """resnet.py's pre-activation unit: bn-relu-conv-bn-relu-conv plus identity shortcut."""
    S = mx.sym
    data = S.Variable("data")
    body = S.BatchNorm(data, fix_gamma=True, eps=2e-5, name="bn_data")
    body = S.Convolution(body, num_filter=4, kernel=(3, 3), pad=(1, 1), no_bias=True, name="conv0")
    bn1 = S.BatchNorm(body, fix_gamma=False, eps=2e-5, name="unit1_bn1")
    conv1 = S.Convolution(S.Activation(bn1, act_type="relu", name="unit1_relu1"), num_filter=4,
                          kernel=(3, 3), pad=(1, 1), no_bias=True, name="unit1_conv1")
    bn2 = S.BatchNorm(conv1, fix_gamma=False, eps=2e-5, name="unit1_bn2")
    conv2 = S.Convolution(S.Activation(bn2, act_type="relu", name="unit1_relu2"), num_filter=4,
                          kernel=(3, 3), pad=(1, 1), no_bias=True, name="unit1_conv2")
    out = S.BatchNorm(conv2 + body, fix_gamma=False, eps=2e-5, name="bn1")
    return _head(S, S.Activation(out, act_type="relu", name="relu1"), 3)


def inception_bn_block(mx):
    """inception-bn.py's InceptionFactoryA followed by InceptionFactoryB, tiny channels."""
    S = mx.sym
    data = S.Variable("data")
    c1 = _conv_bn(S, data, "3a_1x1", 2, kernel=(1, 1), pad=(0, 0))
    c3r = _conv_bn(S, data, "3a_3x3_reduce", 2, kernel=(1, 1), pad=(0, 0))
    c3 = _conv_bn(S, c3r, "3a_3x3", 3)
    cd3r = _conv_bn(S, data, "3a_double_3x3_reduce", 2, kernel=(1, 1), pad=(0, 0))
    cd3 = _conv_bn(S, _conv_bn(S, cd3r, "3a_double_3x3_0", 2), "3a_double_3x3_1", 2)
    pooling = S.Pooling(data, kernel=(3, 3), stride=(1, 1), pad=(1, 1), pool_type="avg",
                        name="avg_pool_3a_pool")
    cproj = _conv_bn(S, pooling, "3a_proj", 2, kernel=(1, 1), pad=(0, 0))
    a = S.Concat(c1, c3, cd3, cproj, name="ch_concat_3a_chconcat")
    b3r = _conv_bn(S, a, "3c_3x3_reduce", 2, kernel=(1, 1), pad=(0, 0))
    b3 = _conv_bn(S, b3r, "3c_3x3", 3, stride=(2, 2))
    bd3r = _conv_bn(S, a, "3c_double_3x3_reduce", 2, kernel=(1, 1), pad=(0, 0))
    bd3 = _conv_bn(S, _conv_bn(S, bd3r, "3c_double_3x3_0", 2), "3c_double_3x3_1", 2, stride=(2, 2))
    bpool = S.Pooling(a, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="max", name="max_pool_3c_pool")
    b = S.Concat(b3, bd3, bpool, name="ch_concat_3c_chconcat")
    return _head(S, b, 3)


def model_cases(mx):
    def case(name, fn, shape, classes=3, **kw):
        with mx.name.NameManager():  # `bn2 + sc` is auto-named: start from _plus0
            sym = fn(mx)
        return dict(name="model_" + name, sym=sym, shapes={"data": shape, "softmax_label": (shape[0],)},
                    inputs={"softmax_label": ("int", 0, classes), "data": ("uniform", -1.0, 1.0)},
                    grad_req={"softmax_label": "null"}, head_grads=False, **kw)
    return [
        case("lenet", lenet, (2, 1, 14, 14)),
        case("mlp", mlp, (4, 10)),
        case("vgg_block", vgg_block, (2, 3, 8, 8), is_train=False),  # Dropout: inference only
        case("resnet_v1_block", resnet_v1_block, (2, 3, 6, 6)),
        case("resnet_v2_block", resnet_v2_block, (2, 4, 4, 4)),
        case("inception_bn_block", inception_bn_block, (2, 3, 6, 6)),
    ]


def all_cases(mx):
    return op_cases(mx) + model_cases(mx)
