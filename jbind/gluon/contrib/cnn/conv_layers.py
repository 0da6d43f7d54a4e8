"""`gluon.contrib.cnn.DeformableConvolution`, as MXNet 1.9.1's: a Convolution computes the
sampling offsets from the input, and `contrib.DeformableConvolution` convolves the input
sampled at those offsets. 2-D, layout NCHW (jbind's op has no NHWC form)."""
from __future__ import annotations

import numbers

from ..._util import check
from ...block import HybridBlock
from ...nn import Activation
from ...nn.conv_layers import conv_repr

__all__ = ["DeformableConvolution"]


def _pair(v, n):
    return (int(v),) * n if isinstance(v, numbers.Integral) else tuple(int(x) for x in v)


class DeformableConvolution(HybridBlock):
    """2-D deformable convolution (Dai et al. 2017). Parameters: 'offset_weight' (and
    'offset_bias' with `offset_use_bias`), zero-initialised by default so the layer starts as
    a plain convolution; 'deformable_conv_weight' and, with `use_bias`, 'deformable_conv_bias'."""

    def __init__(self, channels, kernel_size=(1, 1), strides=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1,
                 num_deformable_group=1, layout="NCHW", use_bias=True, in_channels=0, activation=None,
                 weight_initializer=None, bias_initializer="zeros", offset_weight_initializer="zeros",
                 offset_bias_initializer="zeros", offset_use_bias=True, op_name="DeformableConvolution", adj=None,
                 prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        check(layout in ("NCHW", "NHWC"), "Only supports 'NCHW' and 'NHWC' layout for now")
        check(layout == "NCHW", "DeformableConvolution: jbind's deformable convolution supports layout NCHW only")
        check(adj is None, "DeformableConvolution: adj is not supported")
        kernel = _pair(kernel_size, 2)
        check(len(kernel) == 2, f"DeformableConvolution: kernel_size must have 2 entries, got {kernel_size!r}")
        geometry = {"kernel": kernel, "stride": _pair(strides, 2), "dilate": _pair(dilation, 2),
                    "pad": _pair(padding, 2), "num_group": groups, "layout": layout}
        self._channels, self._in_channels, self._op_name = channels, in_channels, op_name
        offset_channels = 2 * kernel[0] * kernel[1] * num_deformable_group
        self._kwargs_offset = dict(geometry, num_filter=offset_channels, no_bias=not offset_use_bias)
        self._kwargs_deformable_conv = dict(geometry, num_filter=channels, no_bias=not use_bias,
                                            num_deformable_group=num_deformable_group)
        per_group = in_channels // groups if in_channels else 0
        with self.name_scope():
            self.offset_weight = self.params.get("offset_weight", shape=(offset_channels, per_group) + kernel,
                                                 init=offset_weight_initializer, allow_deferred_init=True)
            self.offset_bias = self.params.get("offset_bias", shape=(offset_channels,), init=offset_bias_initializer,
                                               allow_deferred_init=True) if offset_use_bias else None
            self.deformable_conv_weight = self.params.get("deformable_conv_weight",
                                                          shape=(channels, per_group) + kernel,
                                                          init=weight_initializer, allow_deferred_init=True)
            self.deformable_conv_bias = self.params.get("deformable_conv_bias", shape=(channels,),
                                                        init=bias_initializer,
                                                        allow_deferred_init=True) if use_bias else None
            self.act = Activation(activation, prefix=activation + "_") if activation else None

    def _alias(self):
        return "deformable_conv"

    def hybrid_forward(self, F, x, offset_weight, deformable_conv_weight, offset_bias=None,
                       deformable_conv_bias=None):
        offset_args = [x, offset_weight] + ([offset_bias] if offset_bias is not None else [])
        offset = F.Convolution(*offset_args, **self._kwargs_offset)
        conv_args = {"bias": deformable_conv_bias} if deformable_conv_bias is not None else {}
        out = F.contrib.DeformableConvolution(data=x, offset=offset, weight=deformable_conv_weight, name="fwd",
                                              **conv_args, **self._kwargs_deformable_conv)
        return self.act(out) if self.act else out

    def __repr__(self):
        return conv_repr(self, self._kwargs_deformable_conv, self.deformable_conv_weight.shape,
                         self.deformable_conv_bias is not None)
