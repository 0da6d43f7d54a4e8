"""Gluon's convolution, transposed convolution, pooling and padding layers, on the
registered `Convolution`, `Deconvolution`, `Pooling` and `Pad` ops. Weight shapes come
from the op's own shape rule (in_channels 0 is filled at the first forward)."""
from __future__ import annotations

import numbers

from ... import symbol
from .._util import check
from ..block import HybridBlock
from .activations import Activation

__all__ = ["Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose",
           "MaxPool1D", "MaxPool2D", "MaxPool3D", "AvgPool1D", "AvgPool2D", "AvgPool3D",
           "GlobalMaxPool1D", "GlobalMaxPool2D", "GlobalMaxPool3D", "GlobalAvgPool1D", "GlobalAvgPool2D",
           "GlobalAvgPool3D", "ReflectionPad2D"]

_LAYOUTS = {1: ("NCW",), 2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}


def _tuple(v, n, what):
    t = (v,) * n if isinstance(v, numbers.Integral) else tuple(v)
    check(len(t) == n, f"{what} must be a number or a list of {n} ints")
    return t


def _weight_shapes(op_name, data_shape, kwargs):
    """The op's inferred (data, weight[, bias]) shapes for a data shape with unknown (0) dims."""
    data = symbol.var("data", shape=data_shape)
    return getattr(symbol, op_name)(data, **kwargs).infer_shape_partial()[0]


class _Conv(HybridBlock):
    """Shared by every convolution layer: parameters 'weight' and 'bias'."""

    def __init__(self, channels, kernel_size, strides, padding, dilation, groups, layout, in_channels=0,
                 activation=None, use_bias=True, weight_initializer=None, bias_initializer="zeros",
                 op_name="Convolution", adj=None, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        n = len(kernel_size)
        with self.name_scope():
            self._channels = channels
            self._in_channels = in_channels
            self._op_name = op_name
            self._kwargs = {"kernel": kernel_size, "stride": _tuple(strides, n, "strides"),
                            "dilate": _tuple(dilation, n, "dilation"), "pad": _tuple(padding, n, "padding"),
                            "num_filter": channels, "num_group": groups, "no_bias": not use_bias, "layout": layout}
            if adj is not None:
                self._kwargs["adj"] = adj
            dshape = [0] * (n + 2)
            dshape[layout.find("N")] = 1
            dshape[layout.find("C")] = in_channels
            wshapes = _weight_shapes(op_name, dshape, self._kwargs)
            self.weight = self.params.get("weight", shape=wshapes[1], init=weight_initializer,
                                          allow_deferred_init=True)
            self.bias = self.params.get("bias", shape=wshapes[2], init=bias_initializer,
                                        allow_deferred_init=True) if use_bias else None
            self.act = Activation(activation, prefix=activation + "_") if activation is not None else None

    def hybrid_forward(self, F, x, weight, bias=None):
        op = getattr(F, self._op_name)
        out = op(x, weight, name="fwd", **self._kwargs) if bias is None else \
            op(x, weight, bias, name="fwd", **self._kwargs)
        return self.act(out) if self.act is not None else out

    def _alias(self):
        return "conv"

    def __repr__(self):
        return conv_repr(self, self._kwargs, self.weight.shape, self.bias is not None)


def conv_repr(block, k, weight_shape, has_bias: bool) -> str:
    """MXNet's repr of a convolution block: `Conv2D(3 -> 8, kernel_size=(3, 3), stride=...)`
    with padding, dilation, groups, bias and activation where they are not the defaults."""
    n = len(k["kernel"])
    s = f"{block.__class__.__name__}({weight_shape[1] if weight_shape[1] else None} -> {weight_shape[0]}, " \
        f"kernel_size={k['kernel']}, stride={k['stride']}"
    if k["pad"] != (0,) * n:
        s += f", padding={k['pad']}"
    if k["dilate"] != (1,) * n:
        s += f", dilation={k['dilate']}"
    if k["num_group"] != 1:
        s += f", groups={k['num_group']}"
    if not has_bias:
        s += ", bias=False"
    if block.act:
        s += f", {block.act}"
    return s + ")"

def _conv_class(n, transpose):
    op = "Deconvolution" if transpose else "Convolution"
    name = f"Conv{n}D" + ("Transpose" if transpose else "")
    layouts = _LAYOUTS[n]

    def build(self, channels, kernel_size, strides, padding, output_padding, dilation, groups, layout,
              activation, use_bias, weight_initializer, bias_initializer, in_channels, kwargs):
        check(layout in layouts, f"Only supports {' and '.join(repr(x) for x in layouts)} layout for now")
        adj = _tuple(output_padding, n, "output_padding") if transpose else None
        _Conv.__init__(self, channels, _tuple(kernel_size, n, "kernel_size"), strides, padding, dilation, groups,
                       layout, in_channels, activation, use_bias, weight_initializer, bias_initializer,
                       op_name=kwargs.pop("op_name", op), adj=adj, **kwargs)
        if transpose:
            self.outpad = adj

    if transpose:
        def __init__(self, channels, kernel_size, strides=1, padding=0, output_padding=0, dilation=1, groups=1,
                     layout=layouts[0], activation=None, use_bias=True, weight_initializer=None,
                     bias_initializer="zeros", in_channels=0, **kwargs):
            build(self, channels, kernel_size, strides, padding, output_padding, dilation, groups, layout,
                  activation, use_bias, weight_initializer, bias_initializer, in_channels, kwargs)
    else:
        def __init__(self, channels, kernel_size, strides=1, padding=0, dilation=1, groups=1, layout=layouts[0],
                     activation=None, use_bias=True, weight_initializer=None, bias_initializer="zeros",
                     in_channels=0, **kwargs):
            build(self, channels, kernel_size, strides, padding, None, dilation, groups, layout, activation,
                  use_bias, weight_initializer, bias_initializer, in_channels, kwargs)
    doc = (f"{n}-D {'transposed ' if transpose else ''}convolution (`{op}`), layout {layouts[0]} by default; "
           "parameters 'weight' and 'bias'.")
    return type(name, (_Conv,), {"__init__": __init__, "__doc__": doc, "__module__": __name__})


Conv1D, Conv2D, Conv3D = (_conv_class(n, False) for n in (1, 2, 3))
Conv1DTranspose, Conv2DTranspose, Conv3DTranspose = (_conv_class(n, True) for n in (1, 2, 3))


class _Pooling(HybridBlock):
    """Shared by the pooling layers: the `Pooling` op (prefix 'pool')."""

    def __init__(self, pool_size, strides, padding, ceil_mode, global_pool, pool_type, layout,
                 count_include_pad=None, **kwargs):
        super().__init__(**kwargs)
        n = len(pool_size)
        strides = pool_size if strides is None else strides
        self._kwargs = {"kernel": pool_size, "stride": _tuple(strides, n, "strides"),
                        "pad": _tuple(padding, n, "padding"), "global_pool": global_pool, "pool_type": pool_type,
                        "layout": layout, "pooling_convention": "full" if ceil_mode else "valid"}
        if count_include_pad is not None:
            self._kwargs["count_include_pad"] = count_include_pad

    def _alias(self):
        return "pool"

    def hybrid_forward(self, F, x):
        return F.Pooling(x, name="fwd", **self._kwargs)

    def __repr__(self):
        k = self._kwargs
        return (f"{self.__class__.__name__}(size={k['kernel']}, stride={k['stride']}, padding={k['pad']}, "
                f"ceil_mode={k['pooling_convention'] == 'full'}, global_pool={k['global_pool']}, "
                f"pool_type={k['pool_type']}, layout={k['layout']})")


def _pool_class(n, pool_type):
    name = f"{pool_type.capitalize()}Pool{n}D"
    layouts = ("NCW", "NWC") if n == 1 else _LAYOUTS[n]

    def check_layout(layout):
        check(layout in layouts, f"Only {' and '.join(layouts)} layouts are valid for {n}D Pooling")

    if pool_type == "max":
        def __init__(self, pool_size=2, strides=None, padding=0, layout=layouts[0], ceil_mode=False, **kwargs):
            check_layout(layout)
            _Pooling.__init__(self, _tuple(pool_size, n, "pool_size"), strides, padding, ceil_mode, False, "max",
                              layout, **kwargs)
    else:
        def __init__(self, pool_size=2, strides=None, padding=0, layout=layouts[0], ceil_mode=False,
                     count_include_pad=True, **kwargs):
            check_layout(layout)
            _Pooling.__init__(self, _tuple(pool_size, n, "pool_size"), strides, padding, ceil_mode, False, "avg",
                              layout, count_include_pad, **kwargs)
    doc = f"{n}-D {pool_type} pooling (the `Pooling` op); strides default to pool_size."
    return type(name, (_Pooling,), {"__init__": __init__, "__doc__": doc, "__module__": __name__})


def _global_pool_class(n, pool_type):
    name = f"Global{pool_type.capitalize()}Pool{n}D"
    layouts = ("NCW", "NWC") if n == 1 else _LAYOUTS[n]

    def __init__(self, layout=layouts[0], **kwargs):
        check(layout in layouts, f"Only {' and '.join(layouts)} layouts are valid for {n}D Pooling")
        _Pooling.__init__(self, (1,) * n, None, 0, True, True, pool_type, layout, **kwargs)
    doc = f"{n}-D global {pool_type} pooling: every spatial axis reduced to size 1."
    return type(name, (_Pooling,), {"__init__": __init__, "__doc__": doc, "__module__": __name__})


MaxPool1D, MaxPool2D, MaxPool3D = (_pool_class(n, "max") for n in (1, 2, 3))
AvgPool1D, AvgPool2D, AvgPool3D = (_pool_class(n, "avg") for n in (1, 2, 3))
GlobalMaxPool1D, GlobalMaxPool2D, GlobalMaxPool3D = (_global_pool_class(n, "max") for n in (1, 2, 3))
GlobalAvgPool1D, GlobalAvgPool2D, GlobalAvgPool3D = (_global_pool_class(n, "avg") for n in (1, 2, 3))


class ReflectionPad2D(HybridBlock):
    """Pad the two spatial axes of NCHW data by reflection (`Pad` with mode 'reflect').
    `padding` is an int for every side or MXNet's 8-entry `pad_width`."""

    def __init__(self, padding=0, **kwargs):
        super().__init__(**kwargs)
        if isinstance(padding, numbers.Integral):
            padding = (0, 0, 0, 0, padding, padding, padding, padding)
        check(len(padding) == 8, f"ReflectionPad2D: padding must be an int or 8 ints, got {padding}")
        self._padding = tuple(padding)

    def hybrid_forward(self, F, x):
        return F.pad(x, mode="reflect", pad_width=self._padding)
