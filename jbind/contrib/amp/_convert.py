"""The mixed-precision graph rewrite behind `amp.convert_symbol` (MXNet's ReducePrecision
pass and the dtype bookkeeping its C API does after it).

Each node is copied in graph order. A node of a target-dtype op gets `amp_cast` to the
target dtype on its inputs, a float32 op (or an excluded node) `amp_cast` to float32, a
widest-type op either `amp_cast`s (when every input's dtype is already known) or one
`amp_multicast` over its inputs. Casts of one entry to one dtype are shared between
consumers. Every output of the graph ends in float32. Cast nodes are named as MXNet's:
`<node>[_<output>]_amp_cast_<dtype>` and `<first input>[_<output>]_amp_multicast`.
"""
from __future__ import annotations

import numpy as np

from ...base import DTYPE_NP_TO_MX, MXNetError, np_dtype
from ...ops._base import ALIASES, get_op
from ...symbol import infer as _infer
from ...symbol._node import Node, topo_order
from ...symbol.graph import Graph
from ...symbol.symbol import Symbol

# Ops whose outputs MXNet names (FListOutputNames): a cast after one of their outputs is
# named after the output ("fc_output_amp_cast_float16"); after another op's output, after
# its index ("exp0_0_amp_cast_float32").
_NAMED_OUTPUTS = frozenset("""
    Activation BatchNorm BatchNorm_v1 BilinearSampler CTCLoss Concat Convolution Convolution_v1
    Correlation Crop Custom Deconvolution Dropout FullyConnected GridGenerator GroupNorm
    IdentityAttachKLSparseReg InstanceNorm L2Normalization LRN LayerNorm LeakyReLU MakeLoss Pad
    Pooling Pooling_v1 RNN ROIPooling SVMOutput SequenceLast SequenceMask SequenceReverse
    SliceChannel SoftmaxActivation SoftmaxOutput SpatialTransformer SwapAxis UpSampling
    _contrib_BatchNormWithReLU _contrib_DeformableConvolution _contrib_DeformablePSROIPooling
    _contrib_MultiBoxDetection _contrib_MultiBoxPrior _contrib_MultiBoxTarget _contrib_MultiProposal
    _contrib_PSROIPooling _contrib_Proposal _contrib_ROIAlign _contrib_RROIAlign _contrib_SyncBatchNorm
    _contrib_count_sketch _contrib_fft _contrib_hawkesll _contrib_ifft _contrib_index_array
    _contrib_interleaved_matmul_encdec_qk _contrib_interleaved_matmul_encdec_valatt
    _contrib_interleaved_matmul_selfatt_qk _contrib_interleaved_matmul_selfatt_valatt
    _rnn_param_concat col2im elemwise_add im2col make_loss softmax softmin""".split())

_F32 = np.dtype(np.float32)


def canonical(names) -> set:
    """Op names as graph nodes carry them (an alias such as `_plus` is `elemwise_add`)."""
    return {ALIASES.get(n, n) for n in names}


def _op_name(node) -> str:
    return node.op.name


def _suffix(entry) -> str:
    node, i = entry
    if node.op is None:
        return ""
    if _op_name(node) in _NAMED_OUTPUTS:
        return "_" + node.op.outputs()[i]
    return f"_{i}"


def _cast_node(entry, mirror_entry, dtype: str):
    node = Node(get_op("amp_cast").from_attrs({"dtype": dtype}),
                f"{entry[0].name}{_suffix(entry)}_amp_cast_{dtype}", {"dtype": dtype}, (mirror_entry,))
    return (node, 0)


def _infer_outs(node, first, target):
    """The op's output dtypes when its first input is `first`, or None where unknown."""
    n_args = node.num_args()
    ins = [np.dtype(first)] + [None] * (n_args - 1)
    try:
        arg_t, out_t, _ = node.op.infer_type(ins, [None] * node.num_outputs())
    except Exception:  # noqa: BLE001 - a rule that needs more than one input: nothing known
        return None, None
    return arg_t, out_t


def _cond_fp32(node, conditional) -> bool:
    for param, values in conditional.get(_op_name(node), ()):
        v = node.attrs.get(param)
        if v is not None and v in values:
            return True
    return False


def reduce_precision(sym: Symbol, target: str, target_ops: set, fp32_ops: set, widest_ops: set,
                     conditional: dict, excluded: set, data_names: set, cast_optional_params: bool):
    """-> the rewritten symbol's heads (MXNet's ReducePrecision pass)."""
    target_t = np_dtype(target)
    mirror: dict[int, Node] = {}
    fp32_map: dict = {}     # (id(node), i) of the original -> entry known to be float32
    low_map: dict = {}      # ... -> entry known to be in the target dtype

    def m(entry):
        return (mirror[id(entry[0])], entry[1])

    def key(entry):
        return (id(entry[0]), entry[1])

    def record(node, new, out_types):
        for i, t in enumerate(out_types or ()):
            if t is None:
                continue
            if np.dtype(t) == target_t:
                low_map[(id(node), i)] = (new, i)
            elif np.dtype(t) == _F32:
                fp32_map[(id(node), i)] = (new, i)

    for node in topo_order(sym._heads):
        is_var = node.op is None
        name = None if is_var else _op_name(node)
        ins = []
        out_types = None
        n_args = node.num_args()
        if (not is_var and name in fp32_ops) or node.name in excluded:
            out_types = [_F32] * node.num_outputs()
            for e in node.inputs:
                if key(e) in fp32_map:
                    ins.append(fp32_map[key(e)])
                elif e[0].op is None:
                    ins.append(m(e))
                else:
                    fp32_map[key(e)] = _cast_node(e, m(e), "float32")
                    ins.append(fp32_map[key(e)])
        elif not is_var and name in target_ops:
            arg_t, out_types = _infer_outs(node, target_t, target)
            arg_t = list(arg_t or []) + [None] * len(node.inputs)
            for k, e in enumerate(node.inputs):
                t = arg_t[k] if k < n_args else None
                if key(e) in low_map:
                    ins.append(low_map[key(e)])
                elif ((cast_optional_params and e[0].op is None and e[0].name not in data_names)
                      or k >= n_args or not (t is None or np.dtype(t) == target_t)):
                    ins.append(m(e))  # a parameter stored in the target dtype, an aux state, or an input the op wants float32
                    if cast_optional_params and e[0].op is None:
                        low_map[key(e)] = m(e)
                else:
                    low_map[key(e)] = _cast_node(e, m(e), target)
                    ins.append(low_map[key(e)])
        elif not is_var and name in widest_ops:
            if not node.inputs:
                raise MXNetError(f"amp.convert_symbol: {name} {node.name!r} has no inputs")
            known = all(key(e) in low_map or key(e) in fp32_map for e in node.inputs)
            if not known:
                first = node.inputs[0]
                n = len(node.inputs)
                mc = Node(get_op("amp_multicast").from_attrs({"num_outputs": n}),
                          f"{first[0].name}{_suffix(first)}_amp_multicast", {"num_outputs": str(n)},
                          tuple(m(e) for e in node.inputs))
                ins = [(mc, i) for i in range(n)]
            else:
                wide = any(key(e) in fp32_map for e in node.inputs)
                use, dtype = (fp32_map, "float32") if wide else (low_map, target)
                out_types = [_F32 if wide else target_t] * node.num_outputs()
                for e in node.inputs:
                    if key(e) not in use:
                        use[key(e)] = _cast_node(e, m(e), dtype)
                    ins.append(use[key(e)])
        elif not is_var and node.name not in excluded and _cond_fp32(node, conditional):
            out_types = [_F32] * node.num_outputs()
            for k, e in enumerate(node.inputs):
                if key(e) in fp32_map:
                    ins.append(fp32_map[key(e)])
                elif k >= n_args:
                    ins.append(m(e))
                else:
                    fp32_map[key(e)] = _cast_node(e, m(e), "float32")
                    ins.append(fp32_map[key(e)])
        else:
            if node.inputs and (key(node.inputs[0]) in fp32_map or key(node.inputs[0]) in low_map):
                first = target_t if key(node.inputs[0]) in low_map else _F32
                out_types = _infer_outs(node, first, target)[1]
            ins = [m(e) for e in node.inputs]
        new = node if is_var else Node(node.op, node.name, dict(node.attrs), tuple(ins))
        if is_var and node.name in excluded:
            out_types = [_F32]
        mirror[id(node)] = new
        record(node, new, out_types)

    heads = []
    for e in sym._heads:
        if key(e) not in fp32_map:
            fp32_map[key(e)] = _cast_node(e, m(e), "float32")
        heads.append(fp32_map[key(e)])
    return heads


def set_param_dtypes(sym: Symbol, target: str, data_names, model_params: set, cast_optional_params: bool):
    """Write each parameter's dtype into its `__dtype__` attribute as MXNet's C API does
    after the pass: inferred with the data as float32, float32 where still unknown."""
    g_names = sym.list_inputs()
    given = {n: "float32" for n in data_names if n in g_names}
    vals = _infer.entry_values(sym, _infer.DTYPE, given)
    g = Graph(sym._heads)  # this symbol's own nodes (the memoized index may hold an identical graph's)
    dtypes = {g.nodes[vi].name: vals[g.offsets[vi]] for vi in g.var_index}
    var_entry = {id(g.nodes[vi]): g.offsets[vi] for vi in g.var_index}
    if cast_optional_params:  # MXNet's AMPInferUnknown: a parameter only cast takes the cast's dtype
        seen: dict = {}
        for node in g.nodes:
            if node.op is None:
                continue
            if node.op.name == "amp_cast":
                c = node.inputs[0][0]
                if c.op is None:
                    _settle(dtypes, seen, c.name, np_dtype(node.attrs["dtype"]), vals[var_entry[id(c)]])
            elif node.op.name == "amp_multicast" and all(c.op is None for c, _ in node.inputs):
                for c, _ in node.inputs:
                    _settle(dtypes, seen, c.name, np_dtype(target), vals[var_entry[id(c)]])
    changed = {}
    for node in g.nodes:
        if node.op is not None:
            continue
        t = dtypes.get(node.name)
        code = str(DTYPE_NP_TO_MX[np.dtype(t if t is not None else _F32)])
        if (model_params and node.name in model_params) or (not model_params and "__dtype__" in node.attrs):
            changed[id(node)] = Node(None, node.name, {**node.attrs, "__dtype__": code}, ())
    return _substitute(sym, changed) if changed else sym


def _settle(dtypes, seen, name, dtype, inferred):
    if name not in seen:
        if inferred is None:
            seen[name] = dtype
            dtypes[name] = dtype
    elif seen[name] != dtype:
        dtypes[name] = inferred


def _substitute(sym: Symbol, changed: dict) -> Symbol:
    memo: dict = {}
    for node in topo_order(sym._heads):
        if id(node) in changed:
            memo[id(node)] = changed[id(node)]
        elif node.op is None:
            memo[id(node)] = node
        else:
            ins = tuple((memo[id(c)], i) for c, i in node.inputs)
            memo[id(node)] = Node(node.op, node.name, dict(node.attrs), ins)
    return Symbol([(memo[id(n)], i) for n, i in sym._heads])
