"""Custom operators (`mx.operator`) written once for MXNet 1.9.1 (make_custom_golden.py)
and jbind (tests/test_custom_op.py, tests/test_ops_custom.py): `define(mx)` registers them
on the module it is given, `cases(mx)` builds the golden graphs.

- golden_softmax: MXNet's own example, a softmax loss head (need_top_grad=False) whose
  backward reads the label, in numpy.
- golden_scaled_square: `scale * x**2` with the head gradient, a keyword (`scale`) that
  arrives as a string, computed with NDArray arithmetic.
- golden_running_mean: `x - moving_mean`, an aux state the forward updates in training.
  (One output: MXNet 1.9.1's backward storage inference misreads the aux states of an
  op whose outputs outnumber its arguments.)

Each op records what it was called with in `LOG[op_type]`, so both sides can compare the
`req` lists and `is_train` flags they were given.
"""
import numpy as np

LOG = {}
_DEFINED = {}


def define(mx):
    """Register the golden ops with `mx` (mxnet or jbind); once per module."""
    if mx.__name__ in _DEFINED:
        return
    _DEFINED[mx.__name__] = True

    def log(op_type, *what):
        LOG.setdefault(op_type, []).append(what)

    class Softmax(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            log("golden_softmax", "forward", bool(is_train), list(req))
            x = in_data[0].asnumpy()
            y = np.exp(x - x.max(axis=1, keepdims=True))
            y /= y.sum(axis=1, keepdims=True)
            self.assign(out_data[0], req[0], mx.nd.array(y))

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            log("golden_softmax", "backward", list(req))
            lab = in_data[1].asnumpy().ravel().astype(int)
            y = out_data[0].asnumpy()
            y[np.arange(lab.shape[0]), lab] -= 1.0
            self.assign(in_grad[0], req[0], mx.nd.array(y))

    @mx.operator.register("golden_softmax")
    class SoftmaxProp(mx.operator.CustomOpProp):
        def __init__(self):
            super(SoftmaxProp, self).__init__(need_top_grad=False)

        def list_arguments(self):
            return ["data", "label"]

        def list_outputs(self):
            return ["output"]

        def infer_shape(self, in_shape):
            return [in_shape[0], (in_shape[0][0],)], [in_shape[0]], []

        def create_operator(self, ctx, shapes, dtypes):
            return Softmax()

    class ScaledSquare(mx.operator.CustomOp):
        def __init__(self, scale):
            super(ScaledSquare, self).__init__()
            self.scale = scale

        def forward(self, is_train, req, in_data, out_data, aux):
            log("golden_scaled_square", "forward", bool(is_train), list(req))
            self.assign(out_data[0], req[0], in_data[0] * in_data[0] * self.scale)

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            log("golden_scaled_square", "backward", list(req))
            self.assign(in_grad[0], req[0], out_grad[0] * in_data[0] * (2.0 * self.scale))

    @mx.operator.register("golden_scaled_square")
    class ScaledSquareProp(mx.operator.CustomOpProp):
        def __init__(self, scale="1.0"):
            super(ScaledSquareProp, self).__init__(need_top_grad=True)
            log("golden_scaled_square", "prop", scale)
            self.scale = float(scale)

        def create_operator(self, ctx, shapes, dtypes):
            return ScaledSquare(self.scale)

    class RunningMean(mx.operator.CustomOp):
        def __init__(self, momentum):
            super(RunningMean, self).__init__()
            self.momentum = momentum

        def forward(self, is_train, req, in_data, out_data, aux):
            log("golden_running_mean", "forward", bool(is_train), list(req))
            x, moving = in_data[0], aux[0]
            self.assign(out_data[0], req[0], x - moving.reshape((1, -1)))
            if is_train:
                moving[:] = moving * self.momentum + x.mean(axis=0) * (1.0 - self.momentum)

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            log("golden_running_mean", "backward", list(req))
            self.assign(in_grad[0], req[0], out_grad[0])

    @mx.operator.register("golden_running_mean")
    class RunningMeanProp(mx.operator.CustomOpProp):
        def __init__(self, momentum="0.9"):
            super(RunningMeanProp, self).__init__(need_top_grad=True)
            self.momentum = float(momentum)

        def list_auxiliary_states(self):
            return ["moving_mean"]

        def infer_shape(self, in_shape):
            data = in_shape[0]
            return [data], [data], [[data[1]]]

        def create_operator(self, ctx, shapes, dtypes):
            return RunningMean(self.momentum)


def cases(mx):
    """The golden graphs: name, `build()` of the symbol, shapes, input specs, grad_req,
    whether backward takes head gradients.

    Symbols are built when used: MXNet 1.9.1 keeps the backward dependencies of the last
    Prop it made in one global, and its backward of a loss head (no head gradient) fails
    when another op's Prop was made since."""
    define(mx)
    S = mx.sym

    def fc():
        return S.FullyConnected(S.Variable("data"), num_hidden=4, name="fc")
    return [
        dict(name="softmax_loss", op_type="golden_softmax",
             build=lambda: S.Custom(data=fc(), label=S.Variable("softmax_label"), op_type="golden_softmax",
                                   name="softmax"),
             shapes={"data": (5, 3), "softmax_label": (5,)}, inputs={"softmax_label": ("int", 0, 4)},
             grad_req={"softmax_label": "null"}, head_grads=False),
        dict(name="scaled_square", op_type="golden_scaled_square",
             build=lambda: S.Custom(fc(), op_type="golden_scaled_square", scale=2.5, name="sq"),
             shapes={"data": (5, 3)}, inputs={}, grad_req={}, head_grads=True),
        dict(name="running_mean", op_type="golden_running_mean",
             build=lambda: S.Custom(fc(), op_type="golden_running_mean", momentum="0.75", name="rm"),
             shapes={"data": (5, 3)}, inputs={}, grad_req={"data": "null"}, head_grads=True),
    ]


def draw(rng, spec, shape):
    """An input from its spec: ('int', lo, hi) or uniform in [-1, 1)."""
    if spec[0] == "int":
        return rng.randint(spec[1], spec[2], size=shape).astype(np.float32)
    return rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)
