"""MXNet's `mx.viz`: a table of a network's layers (`print_summary`) and a Graphviz drawing
of its graph (`plot_network`).

Both read the symbol's MXNet JSON, as MXNet 1.9.1 does, so they list the same nodes in the
same order and print the same text; tests/golden/viz/ holds MXNet's output for comparison.
Where MXNet 1.9.1 fails with an IndexError or KeyError, these print or draw instead:

- print_summary counts no input channels from an input with a 1-D (batch-only) shape,
  such as the bucketing example's label reshaped to (-1,); MXNet raises IndexError.
- plot_network labels an edge read from a several-output op without `num_outputs` (topk
  with ret_typ='both') with that output's shape; MXNet raises KeyError.
- plot_network takes a Pooling without `pool_type` as MXNet's default, 'max'; MXNet
  raises KeyError.

A shape or dtype dict that does not determine the graph raises an error naming the
arguments left undetermined (MXNet: ValueError "Input shape is incomplete"); it is an
`MXNetError` and a `ValueError`.
"""
from __future__ import annotations

import json
import re
import warnings
from collections.abc import Mapping
from typing import Optional, Sequence

import numpy as np

from .base import MXNetError
from .symbol.infer import DTYPE, SHAPE, complete, infer
from .symbol.symbol import Symbol

__all__ = ["print_summary", "plot_network"]


class IncompleteError(MXNetError, ValueError):
    """The shapes or dtypes given to print_summary / plot_network leave some undetermined
    (a ValueError as well, which MXNet raises)."""


class VizTypeError(MXNetError, TypeError):
    """print_summary / plot_network got an argument of the wrong type (not a Symbol, a
    shape that is not a dict)."""


def _ints(text: str) -> list[int]:
    """The integers of a tuple attribute as MXNet's JSON stores it: '(5, 5)' -> [5, 5]."""
    return [int(d) for d in re.findall(r"\d+", text)]


def _check_symbol(symbol, fn: str):
    if not isinstance(symbol, Symbol):
        raise VizTypeError(f"{fn}: `symbol` must be a Symbol, got {type(symbol).__name__}")


def _internal_values(symbol: Symbol, kind, given, fn: str, what: str) -> dict:
    """Infer every internal output's shape or dtype from `given`: {output name: value}.
    Raises IncompleteError naming the arguments `given` leaves undetermined."""
    if not isinstance(given, Mapping):
        raise VizTypeError(f"{fn}: `{what}` must be a dict of input name -> {what}, "
                           f"got {type(given).__name__}")
    internals = symbol.get_internals()
    args, outs, auxs = infer(internals, kind, (), dict(given))
    known = complete if kind is SHAPE else (lambda v: v is not None)
    inputs = zip(internals.list_arguments() + internals.list_auxiliary_states(), args + auxs)
    missing = [f"{n}={kind.fmt(v)}" for n, v in inputs if not known(v)]
    if not missing:
        missing = [f"{n}={kind.fmt(v)}" for n, v in zip(internals.list_outputs(), outs) if not known(v)]
    if missing:
        note = " (0 is an unknown dimension)" if kind is SHAPE else ""
        raise IncompleteError(
            f"{fn}: the {what}s given ({dict(given)}) do not determine the graph; undetermined"
            f"{note}: {', '.join(missing[:10])}{' ...' if len(missing) > 10 else ''}. "
            f"Add them to `{what}`")
    return dict(zip(internals.list_outputs(), outs))


# --- print_summary -----------------------------------------------------------------------

def _no_bias(attrs: dict) -> bool:
    return attrs.get("no_bias") == "True"  # MXNet compares the string: no_bias='1' has a bias


def _conv_params(attrs, channels, out_shape):
    filters = int(attrs["num_filter"])
    n = channels * filters // int(attrs.get("num_group", "1"))
    for k in _ints(attrs["kernel"]):
        n *= k
    return n if _no_bias(attrs) else n + filters


def _fc_params(attrs, channels, out_shape):
    # MXNet counts the input's first non-batch dimension only, not its flattened size.
    return (channels + (0 if _no_bias(attrs) else 1)) * int(attrs["num_hidden"])


def _bn_params(attrs, channels, out_shape):
    return 2 * out_shape[1] if out_shape else 0  # gamma and beta; without shapes, nothing


def _embedding_params(attrs, channels, out_shape):
    return int(attrs["input_dim"]) * int(attrs["output_dim"])


# The ops MXNet 1.9.1 counts parameters for (RNN's are not counted): op -> fn(attrs,
# input channels, full output shape or None) -> count.
_PARAMS = {"Convolution": _conv_params, "FullyConnected": _fc_params,
           "BatchNorm": _bn_params, "Embedding": _embedding_params}


def _row(fields: Sequence, stops: Sequence[int]) -> str:
    """Each field starts at the previous stop and is cut or padded to its own."""
    line = ""
    for field, stop in zip(fields, stops):
        line = (line + str(field))[:stop].ljust(stop)
    return line


def _summary_lines(symbol: Symbol, shapes: Optional[dict], line_length: int, stops) -> list[str]:
    doc = json.loads(symbol.tojson())
    nodes = doc["nodes"]
    # MXNet 1.9.1 tests membership in its first head entry [node, output, version] taken
    # as a set of numbers: variable 0, and a variable whose index is one of those numbers,
    # count as layers. Kept, so the tables are MXNet's.
    first_head = set(doc["heads"][0]) if doc["heads"] else set()

    def shape_of(node) -> Optional[tuple]:
        if shapes is None:
            return None
        return shapes.get(node["name"] if node["op"] == "null" else node["name"] + "_output")

    lines = ["_" * line_length, _row(["Layer (type)", "Output Shape", "Param #", "Previous Layer"], stops),
             "=" * line_length]
    total = 0
    for i, node in enumerate(nodes):
        if node["op"] == "null" and i > 0:
            continue
        previous, channels = [], 0
        if node["op"] != "null":
            for src_index, _, _ in node["inputs"]:
                src = nodes[src_index]
                if src["op"] != "null" or src_index in first_head:
                    previous.append(src["name"])
                    src_shape = shape_of(src)
                    if src_shape is not None and len(src_shape) > 1:
                        channels += src_shape[1]
        out_shape = shape_of(node)
        rule = _PARAMS.get(node["op"])
        params = rule(node.get("attrs", {}), channels, out_shape) if rule else 0
        total += params
        shown = "x".join(str(d) for d in out_shape[1:]) if out_shape is not None else ""
        lines.append(_row([f"{node['name']}({node['op']})", shown, params,
                           previous[0] if previous else ""], stops))
        lines += [_row(["", "", "", name], stops) for name in previous[1:]]
        lines.append(("=" if i == len(nodes) - 1 else "_") * line_length)
    return lines + [f"Total params: {total}", "_" * line_length]


def print_summary(symbol: Symbol, shape: Optional[dict] = None, line_length: int = 120,
                  positions: Sequence[float] = (.44, .64, .74, 1.)) -> None:
    """Print a table of the network's layers, as MXNet's `mx.viz.print_summary`.

    One row per op node (and the graph's first variable): name and op, output shape
    without the batch dimension, parameter count, and the layers it reads; then the
    total. Parameters are counted as MXNet 1.9.1 counts them: Convolution,
    FullyConnected (from the input's first non-batch dimension), BatchNorm (gamma and
    beta, only with shapes) and Embedding; other ops, RNN included, count 0.

    Args:
        symbol: the network.
        shape: input name -> shape; without it the table has no shapes and counts only
            what the attributes determine.
        line_length: width of the table in characters.
        positions: where each of the four columns ends, as fractions of `line_length`
            (if the last is at most 1) or in characters.

    Raises:
        IncompleteError: `shape` leaves some argument's shape undetermined (an MXNetError
            and a ValueError); the message names them.
    """
    _check_symbol(symbol, "print_summary")
    shapes = None if shape is None else _internal_values(symbol, SHAPE, shape, "print_summary", "shape")
    if positions[-1] <= 1:
        stops = [int(line_length * p) for p in positions]
    else:
        stops = [int(p) for p in positions]
    print("\n".join(_summary_lines(symbol, shapes, line_length, stops)))


# --- plot_network ------------------------------------------------------------------------

_COLORS = ("#8dd3c7", "#fb8072", "#ffffb3", "#bebada", "#80b1d3", "#fdb462", "#b3de69", "#fccde5")
_OP_COLOR = {"null": 0, "Convolution": 1, "FullyConnected": 1, "Activation": 2, "LeakyReLU": 2,
             "BatchNorm": 3, "Pooling": 4, "Concat": 5, "Flatten": 5, "Reshape": 5, "Softmax": 6}
_WEIGHT_SUFFIXES = ("_weight", "_bias", "_beta", "_gamma", "_moving_var", "_moving_mean",
                    "_running_var", "_running_mean")


def _dims(attrs: dict, key: str, absent: str) -> str:
    return "x".join(str(d) for d in _ints(attrs[key])) if key in attrs else absent


def _label(op: str, name: str, attrs: dict) -> str:
    if op == "Convolution":
        kernel, stride = _dims(attrs, "kernel", ""), _dims(attrs, "stride", "1")
        return f"Convolution\n{kernel}/{stride}, {attrs['num_filter']}"
    if op == "FullyConnected":
        return f"FullyConnected\n{attrs['num_hidden']}"
    if op == "Activation":
        return f"Activation\n{attrs['act_type']}"
    if op == "LeakyReLU":
        return f"LeakyReLU\n{attrs.get('act_type', 'Leaky')}"
    if op == "Pooling":
        return (f"Pooling\n{attrs.get('pool_type', 'max')}, "
                f"{_dims(attrs, 'kernel', '[]')}/{_dims(attrs, 'stride', '1')}")
    if op == "Custom":
        return attrs["op_type"]
    return name


def _edge_key(src: dict, out_index: int, values: dict) -> Optional[str]:
    """The internal output whose shape/dtype labels an edge from `src`, as MXNet picks it
    (`name_output`, or the last output of an op with `num_outputs`), else the output the
    edge reads (MXNet raises KeyError there)."""
    if src["op"] == "null":
        return src["name"]
    key = src["name"] + "_output"
    if "num_outputs" in src.get("attrs", {}):
        key += str(int(src["attrs"]["num_outputs"]) - 1)
    if key not in values:
        key = f"{src['name']}_output{out_index}"
    return key if key in values else None


def plot_network(symbol: Symbol, title: str = "plot", save_format: str = "pdf",
                 shape: Optional[dict] = None, dtype: Optional[dict] = None,
                 node_attrs: Optional[dict] = None, hide_weights: bool = True):
    """Draw the network as a `graphviz.Digraph`, as MXNet's `mx.viz.plot_network`.

    Needs the graphviz Python package (`pip install graphviz`); rendering the drawing
    (`.render()`, `.view()`) needs the Graphviz programs too. Node names, labels, colours
    and edges are MXNet 1.9.1's; edges point from each op back to its inputs.

    Args:
        symbol: the network.
        title: the Digraph's name.
        save_format: the Digraph's output format ('pdf', 'png', ...).
        shape: input name -> shape; labels each edge with the shape it carries (without
            the batch dimension).
        dtype: input name -> numpy dtype; adds the type to each edge label.
        node_attrs: Graphviz attributes for the nodes, over the defaults (box, 1.3 x 0.8034,
            filled); `fillcolor` is always the op's colour.
        hide_weights: leave out variables named like parameters (`*_weight`, `*_bias`,
            `*_gamma`, ...) and their edges. If False their edges are drawn, to plain nodes.

    Raises:
        ImportError: the graphviz package is not installed.
        IncompleteError: `shape` or `dtype` leaves some argument undetermined.
    """
    try:
        from graphviz import Digraph
    except ImportError as e:
        raise ImportError("plot_network needs the graphviz Python package: pip install graphviz "
                          "(rendering the drawing also needs the Graphviz programs)") from e
    _check_symbol(symbol, "plot_network")
    shapes = None if shape is None else _internal_values(symbol, SHAPE, shape, "plot_network", "shape")
    dtypes = None if dtype is None else _internal_values(symbol, DTYPE, dtype, "plot_network", "dtype")
    nodes = json.loads(symbol.tojson())["nodes"]
    names = [n["name"] for n in nodes]
    repeated = list(dict.fromkeys(n for k, n in enumerate(names) if n in names[:k]))
    if repeated:
        warnings.warn("plot_network: several nodes share a name, and Graphviz draws them as one "
                      "node, which may make cycles. Repeated names: " + ",".join(repeated),
                      RuntimeWarning, stacklevel=2)

    style = {"shape": "box", "fixedsize": "true", "width": "1.3", "height": "0.8034", "style": "filled"}
    style.update(node_attrs or {})
    dot = Digraph(name=title, format=save_format)
    hidden = set()
    for node in nodes:
        op, name = node["op"], node["name"]
        attr = dict(style)
        if op == "null":
            if name.endswith(_WEIGHT_SUFFIXES):
                if hide_weights:
                    hidden.add(name)
                continue  # not drawn: shown, its edges end at a plain node
            attr["shape"] = "oval"
        attr["fillcolor"] = _COLORS[_OP_COLOR.get(op, 7)]
        dot.node(name=name, label=_label(op, name, node.get("attrs", {})), **attr)

    for node in nodes:
        if node["op"] == "null":
            continue
        inputs = node["inputs"][:1] if node["op"] == "_contrib_BilinearResize2D" else node["inputs"]
        for src_index, out_index, _ in inputs:
            src = nodes[src_index]
            if src["name"] in hidden:
                continue
            attr = {"dir": "back", "arrowtail": "open", "label": ""}
            if shapes is not None:
                key = _edge_key(src, out_index, shapes)
                attr["label"] = "" if key is None else "x".join(str(d) for d in shapes[key][1:])
            if dtypes is not None:
                key = _edge_key(src, out_index, dtypes)
                if key is not None:
                    attr["label"] += f"({np.dtype(dtypes[key]).name})"
            dot.edge(tail_name=node["name"], head_name=src["name"], **attr)
    return dot
