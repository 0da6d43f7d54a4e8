"""Optimizer, lr-scheduler, metric and initializer cases shared by MXNet and jbind.

`make_optimizer_golden.py` runs them with real MXNet 1.9.1 and writes the results under
`optimizer/`; `tests/test_optimizer.py`, `test_lr_scheduler.py`, `test_metric.py` and
`test_initializer.py` run them with jbind. Functions take the library module `mx` as a
parameter. This file imports nothing but numpy.
"""
import numpy as np

# Two parameters, as a Module hands them to the updater: index -> (name, shape).
PARAMS = [("fc_weight", (3, 4)), ("fc_bias", (4,))]
STEPS = 4
IDX2NAME = {0: "fc_weight", 1: "fc_bias"}

_REG = dict(wd=0.01, rescale_grad=0.5, clip_gradient=1.0)

# name -> (optimizer name, kwargs, extras). Extras: idx2name (bool), sym (bool),
# lr_mult / wd_mult (dicts passed to set_lr_mult / set_wd_mult), scheduler ([cls, kwargs]),
# params (number of parameters used, default 2).
OPT_CASES = {
    "sgd_plain": ("sgd", dict(learning_rate=0.1), {}),
    "sgd_momentum": ("sgd", dict(learning_rate=0.1, momentum=0.9, **_REG), {}),
    "sgd_mult": ("sgd", dict(learning_rate=0.1, momentum=0.9, wd=0.1),
                 dict(idx2name=True, lr_mult={"fc_weight": 0.5}, wd_mult={1: 2.0})),
    "sgd_sym_attrs": ("sgd", dict(learning_rate=0.1, momentum=0.5, wd=0.1), dict(idx2name=True, sym=True)),
    "sgd_factor_sched": ("sgd", dict(momentum=0.9),
                         dict(scheduler=["FactorScheduler", dict(step=2, factor=0.5, base_lr=0.2)])),
    "sgd_noclip_zero": ("sgd", dict(learning_rate=0.1, clip_gradient=0.0), {}),
    "ccsgd": ("ccsgd", dict(learning_rate=0.1, momentum=0.9, wd=0.01), {}),
    "nag": ("nag", dict(learning_rate=0.1, momentum=0.9, **_REG), {}),
    "nag_nomom": ("nag", dict(learning_rate=0.1, **_REG), {}),
    "adam": ("adam", dict(learning_rate=0.01), {}),
    "adam_reg": ("adam", dict(learning_rate=0.01, beta1=0.8, beta2=0.99, epsilon=1e-6, **_REG), {}),
    "adam_begin": ("adam", dict(learning_rate=0.01, begin_num_update=3),
                   dict(scheduler=["MultiFactorScheduler", dict(step=[4, 6], factor=0.5, base_lr=0.01)])),
    "rmsprop": ("rmsprop", dict(learning_rate=0.01, **_REG), {}),
    "rmsprop_clipw": ("rmsprop", dict(learning_rate=0.1, gamma1=0.8, clip_weights=0.5), {}),
    "rmsprop_centered": ("rmsprop", dict(learning_rate=0.01, centered=True, **_REG), {}),
    "adagrad": ("adagrad", dict(learning_rate=0.1, **_REG), {}),
    "adadelta": ("adadelta", dict(rho=0.8, **_REG), {}),
    "signum": ("signum", dict(learning_rate=0.1, momentum=0.9, wd_lh=0.05, **_REG), {}),
    "signsgd": ("signum", dict(learning_rate=0.1, momentum=0.0, **_REG), {}),
    "ftml": ("ftml", dict(learning_rate=0.1, **_REG), {}),
    "ftrl": ("ftrl", dict(learning_rate=0.1, lamda1=0.01, beta=1.0, **_REG), {}),
    "adamax": ("adamax", dict(learning_rate=0.01, **_REG), {}),
    "nadam": ("nadam", dict(learning_rate=0.01, **_REG), {}),
    "nadam_one": ("nadam", dict(learning_rate=0.01, wd=0.01), dict(params=1)),
    "dcasgd": ("dcasgd", dict(learning_rate=0.1, lamda=0.1, **_REG), {}),
}


def build_sym(mx):
    """An FC layer whose variables carry __lr_mult__ / __wd_mult__ attributes."""
    w = mx.sym.Variable("fc_weight", lr_mult=2.0)
    b = mx.sym.Variable("fc_bias", lr_mult=0.5, wd_mult=3.0)
    return mx.sym.FullyConnected(mx.sym.Variable("data"), weight=w, bias=b, num_hidden=3, name="fc")


def make_optimizer(mx, name):
    """The optimizer of case `name`, built with library `mx`."""
    opt_name, kwargs, extra = OPT_CASES[name]
    kwargs = dict(kwargs)
    if "scheduler" in extra:
        cls, skw = extra["scheduler"]
        kwargs["lr_scheduler"] = getattr(mx.lr_scheduler, cls)(**skw)
    if extra.get("idx2name"):
        kwargs["param_idx2name"] = dict(IDX2NAME)
    if extra.get("sym"):
        kwargs["sym"] = build_sym(mx)
    opt = mx.optimizer.create(opt_name, **kwargs)
    if "lr_mult" in extra:
        opt.set_lr_mult(extra["lr_mult"])
    if "wd_mult" in extra:
        opt.set_wd_mult(extra["wd_mult"])
    return opt


def num_params(name):
    return OPT_CASES[name][2].get("params", len(PARAMS))


# Learning-rate schedulers: (class, kwargs, the num_update values passed in turn).
_UP = list(range(0, 25))
SCHED_CASES = {
    "factor": ("FactorScheduler", dict(step=3, factor=0.5, base_lr=1.0), _UP),
    "factor_stop": ("FactorScheduler", dict(step=2, factor=0.1, stop_factor_lr=1e-3, base_lr=1.0), _UP),
    "factor_warmup": ("FactorScheduler", dict(step=4, factor=0.5, base_lr=1.0, warmup_steps=5,
                                              warmup_begin_lr=0.1), _UP),
    "factor_back": ("FactorScheduler", dict(step=3, factor=0.5, base_lr=1.0), [10, 2, 4, 20, 1]),
    "multifactor": ("MultiFactorScheduler", dict(step=[3, 7, 12], factor=0.5, base_lr=1.0), _UP),
    "multifactor_warm": ("MultiFactorScheduler", dict(step=[6, 9], factor=0.1, base_lr=1.0, warmup_steps=4,
                                                      warmup_mode="constant", warmup_begin_lr=0.5), _UP),
    "multifactor_back": ("MultiFactorScheduler", dict(step=[3, 7], factor=0.5, base_lr=1.0), [10, 2, 8]),
    "poly": ("PolyScheduler", dict(max_update=20, base_lr=1.0, pwr=2, final_lr=0.1), _UP),
    "poly_warm": ("PolyScheduler", dict(max_update=20, base_lr=1.0, pwr=1, warmup_steps=5), _UP),
    "cosine": ("CosineScheduler", dict(max_update=20, base_lr=1.0, final_lr=0.05), _UP),
    "cosine_warm": ("CosineScheduler", dict(max_update=20, base_lr=2.0, warmup_steps=4,
                                            warmup_begin_lr=0.5), _UP + [7, 3]),
}


def abs_err(label, pred):
    """A custom metric function: (sum |label - argmax(pred)|, count)."""
    return float(np.abs(label.ravel() - pred.argmax(axis=1)).sum()), label.size


def sq_err(label, pred):
    return float(((label.ravel() - pred.ravel()) ** 2).mean())


# Metric cases: (create args, create kwargs, batch kind). Batch kinds are drawn by the
# generator and stored with the results.
METRIC_CASES = {
    "acc": ("acc", {}, "class"),
    "acc_labels": ("acc", {}, "class_idx"),
    "acc_axis0": ("accuracy", dict(axis=0), "class_t"),
    "top_k": ("top_k_accuracy", dict(top_k=3), "class"),
    "f1_macro": ("f1", {}, "binary"),
    "f1_micro": ("f1", dict(average="micro"), "binary"),
    "mcc": ("mcc", {}, "binary"),
    "mae": ("mae", {}, "regress"),
    "mse": ("mse", {}, "regress"),
    "rmse": ("rmse", {}, "regress"),
    "ce": ("ce", {}, "prob"),
    "nll": ("nll_loss", {}, "prob"),
    "perplexity": ("perplexity", dict(ignore_label=None), "prob"),
    "perplexity_ignore": ("perplexity", dict(ignore_label=0), "prob"),
    "loss": ("loss", {}, "loss"),
    "pearsonr": ("pearsonr", {}, "regress"),
    "pearsonr_micro": ("pearsonr", dict(average="micro"), "regress"),
    "composite": (["acc", "ce", "top_k_accuracy"], {}, "class_prob"),
    "custom": ("custom_abs", {}, "class"),
    "np_metric": ("np_sq", {}, "regress"),
}


def make_metric(mx, name):
    spec, kwargs, _ = METRIC_CASES[name]
    if spec == "custom_abs":
        return mx.metric.create(abs_err)
    if spec == "np_sq":
        return mx.metric.np(sq_err)
    if spec == ["acc", "ce", "top_k_accuracy"]:
        return mx.metric.create(["acc", "ce", mx.metric.TopKAccuracy(top_k=2)])
    return mx.metric.create(spec, **kwargs)


def draw_batch(rng, kind):
    """(labels, preds) as lists of float32 numpy arrays, two outputs per batch."""
    out_l, out_p = [], []
    for _ in range(2):
        n, c = 6, 4
        if kind in ("class", "class_prob", "prob"):
            p = rng.uniform(0.05, 1.0, (n, c)).astype(np.float32)
            p /= p.sum(axis=1, keepdims=True)
            lab = rng.randint(0, c, n).astype(np.float32)
        elif kind == "class_idx":
            p = rng.randint(0, c, n).astype(np.float32)
            lab = rng.randint(0, c, n).astype(np.float32)
        elif kind == "class_t":
            p = rng.uniform(0, 1, (c, n)).astype(np.float32)
            lab = rng.randint(0, c, n).astype(np.float32)
        elif kind == "binary":
            p = rng.uniform(0, 1, (n, 2)).astype(np.float32)
            lab = rng.randint(0, 2, n).astype(np.float32)
        elif kind == "regress":
            p = rng.uniform(-1, 1, (n,)).astype(np.float32)
            lab = rng.uniform(-1, 1, (n,)).astype(np.float32)
        elif kind == "loss":
            p = rng.uniform(0, 2, (n,)).astype(np.float32)
            lab = np.zeros(n, np.float32)
        else:
            raise ValueError(kind)
        out_l.append(lab)
        out_p.append(p)
    return out_l, out_p


def probe_initializer(mx):
    """A deterministic initializer whose values encode the parameter's name and element order,
    so FusedRNN's packed layout is checked down to each gate's block."""

    class Probe(mx.init.Initializer):
        def _init_weight(self, name, arr):
            code = sum(ord(ch) * (k + 1) for k, ch in enumerate(str(name))) % 997
            arr[:] = (code + np.arange(arr.size, dtype=np.float32).reshape(arr.shape) / 1000.0)

    return Probe()


# Initializers whose dumps() strings are compared: (class, args, kwargs); a FusedRNN's first
# argument is itself such a triple.
DUMPS_CASES = [
    ("Uniform", [], {}), ("Normal", [0.5], {}), ("Xavier", [], dict(factor_type="in", magnitude=2.34)),
    ("Xavier", ["gaussian", "out"], {}), ("MSRAPrelu", [], {}), ("Orthogonal", [], {}),
    ("Constant", [0.5], {}), ("Zero", [], {}), ("One", [], {}), ("Bilinear", [], {}), ("LSTMBias", [], {}),
    ("FusedRNN", [("Xavier", [], {}), 3, 1, "gru"], {}), ("FusedRNN", [None, 2, 2, "lstm", True], {}),
]


def build_init(mx, spec):
    cls, args, kwargs = spec
    if cls == "FusedRNN" and args[0] is not None:
        args = [build_init(mx, args[0])] + list(args[1:])
    return getattr(mx.init, cls)(*args, **kwargs)


def init_cases(mx):
    """name -> (initializer or callable(desc, arr), desc, shape); the arrays each fills are compared."""
    c = mx.init.Constant(0.3)
    cases = {}
    for nm in ["fc_weight", "fc_bias", "bn_gamma", "bn_beta", "q_min", "q_max", "bn_moving_mean",
               "bn_moving_var", "foo", "fc_weight_quantize"]:
        cases["desc_" + nm] = (c, mx.init.InitDesc(nm), (2, 3))
    for nm in ["fc_weight", "fc_bias", "bn_moving_mean", "bn_moving_var", "bn_moving_inv_var",
               "bn_moving_avg", "q_min", "q_max", "stn_loc_weight", "stn_loc_bias", "upsampling_weight"]:
        shape = (6,) if nm == "stn_loc_bias" else (1, 2, 4, 4) if nm.startswith("up") else (2, 3)
        cases["legacy_" + nm] = (c, nm, shape)
    attr_inits = {"const": '["constant", {"value": 2.0}]', "zeros": "zeros", "ones": "ones",
                  "lstmbias": mx.init.LSTMBias(0.5).dumps(), "one_name": "one"}
    for k, v in attr_inits.items():
        cases["attr_" + k] = (c, mx.init.InitDesc("x_bias", attrs={"__init__": v}), (8,))
    cases["bilinear"] = (mx.init.Bilinear(), mx.init.InitDesc("up_weight"), (2, 3, 4, 4))
    cases["bilinear_odd"] = (mx.init.Bilinear(), mx.init.InitDesc("up_weight"), (1, 1, 3, 5))
    cases["lstmbias"] = (mx.init.LSTMBias(forget_bias=1.5), mx.init.InitDesc("lstm_i2h_weight"), (16,))
    cases["mixed"] = (mx.init.Mixed(["bias", ".*"], [mx.init.Zero(), mx.init.Constant(0.5)]),
                      mx.init.InitDesc("fc_bias"), (3,))
    cases["mixed_w"] = (mx.init.Mixed(["bias", ".*"], [mx.init.Zero(), mx.init.Constant(0.5)]),
                        mx.init.InitDesc("fc_weight"), (3, 2))
    loaded = {"arg:fc_weight": mx.nd.array(np.arange(6).reshape(2, 3)), "aux:bn_moving_var": mx.nd.ones((3,))}
    cases["load"] = (mx.init.Load(loaded, default_init=mx.init.Constant(0.7)), mx.init.InitDesc("fc_weight"), (2, 3))
    cases["load_default"] = (mx.init.Load(loaded, default_init=mx.init.Constant(0.7)),
                             mx.init.InitDesc("fc2_weight"), (2, 3))
    fused = {
        "fused_lstm": (mx.init.FusedRNN(probe_initializer(mx), 3, 2, "lstm", True, 1.0), 5),
        "fused_gru": (mx.init.FusedRNN(mx.init.Constant(0.2), 4, 1, "gru"), 2),
        "fused_rnn": (mx.init.FusedRNN(probe_initializer(mx), 2, 2, "rnn_tanh"), 3),
    }
    for k, (init, ni) in fused.items():
        h, L = init._num_hidden, init._num_layers
        m = {"lstm": 4, "gru": 3}.get(init._mode, 1)
        b = 2 if init._bidirectional else 1
        total = (ni + h + 2) * h * m * b + (L - 1) * m * h * (h + b * h + 2) * b
        # MXNet reaches _init_weight directly: by name, "parameters" is an unknown pattern, and
        # through __init__ FusedRNN(init=<json>) raises KeyError (a bug in MXNet 1.9.1)
        cases[k] = (lambda d, a, init=init: init._init_weight(d, a),
                    mx.init.InitDesc("rnn_parameters", global_init=mx.init.Uniform()), (total,))
        cases[k + "_by_attr"] = (mx.init.Uniform(), mx.init.InitDesc("rnn_parameters",
                                                                     attrs={"__init__": init.dumps()}), (total,))
    cases["fused_probe_global"] = (lambda d, a: fused["fused_lstm"][0].__class__(None, 2, 1, "lstm")._init_weight(d, a),
                                   mx.init.InitDesc("rnn_parameters", global_init=probe_initializer(mx)), (64,))
    cases["fused_by_name"] = (fused["fused_gru"][0], mx.init.InitDesc("rnn_parameters"), (60,))
    # global fallback: FusedRNN(None) through an __init__ attribute uses the calling initializer
    fz = mx.init.FusedRNN(None, 2, 1, "lstm", forget_bias=2.0).dumps()
    cases["fused_global"] = (mx.init.Constant(0.1), mx.init.InitDesc("rnn_parameters", attrs={"__init__": fz}),
                             ((3 + 2 + 2) * 2 * 4,))
    return cases
