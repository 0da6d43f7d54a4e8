"""Lowering: a graph becomes one pure JAX function.

    forward(args, aux, key, is_train) -> (outputs, new_aux)

`args` and `aux` are tuples in `list_arguments()` / `list_auxiliary_states()` order.
Nothing here holds state: aux updates are returned, randomness comes from `key`.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..base import MXNetError
from . import _bnfold, _heads, rolled
from .graph import Graph


def matmul_precision() -> str:
    """The precision graphs are traced with: JAX's `jax_default_matmul_precision` where the
    user set one, else full float32. MXNet's float32 products and convolutions are full
    float32; JAX's default lets a GPU round their inputs to TF32 (about 3e-4 relative error)."""
    return jax.config.jax_default_matmul_precision or "float32"


def make_forward(g: Graph, shapes=None, probed=False):
    """`shapes`: the inferred shape of every entry, passed to `Op.specialize`.

    With `probed` (the executor monitor's lowering, node by node, nothing fused):
    forward(args, aux, key, is_train, probes) -> (outputs, new_aux, every entry's value),
    where `probes` maps (node index, argument position) to an array added to that input
    edge, so the gradient with respect to a zero probe is what flows back along that edge."""
    arg_pos = {vi: k for k, vi in enumerate(g.arg_index)}
    aux_pos = {vi: k for k, vi in enumerate(g.aux_index)}
    # For each op node, the aux positions its aux inputs come from (to route updates back).
    aux_of = []
    for ni, node in enumerate(g.nodes):
        if node.op is None or not node.op.aux_names:
            aux_of.append(())
            continue
        entries = g.in_entries[ni][node.num_args():]
        aux_of.append(tuple(aux_pos[g.offsets.index(e)] for e in entries))

    ops = [None if n.op is None else
           n.op.specialize([shapes[g.offsets[i] + k] for k in range(n.num_outputs())]) if shapes else n.op
           for i, n in enumerate(g.nodes)]

    op_nodes = [i for i, op in enumerate(ops) if op is not None]
    heads = {} if probed else _heads.plan(g)  # SoftmaxOutput node -> the FullyConnected it may fuse with
    fused_fc = set(heads.values())
    bnfold = {} if probed else _bnfold.plan(g, shapes)  # inference BatchNorm node -> its Convolution node
    folded_conv = set(bnfold.values())
    loops = rolled.plan(g, shapes) if shapes is not None and rolled.loop_lowering_enabled() and not probed else None

    def forward(args, aux, key, is_train, probes=None):
        with jax.default_matmul_precision(matmul_precision()):
            return run(args, aux, key, is_train, probes)

    def run(args, aux, key, is_train, probes):
        vals = [None] * g.num_entries
        for vi, k in arg_pos.items():
            vals[g.offsets[vi]] = args[k]
        for vi, k in aux_pos.items():
            vals[g.offsets[vi]] = aux[k]
        new_aux = list(aux)
        deferred = set()

        def lower_node(ni):
            if (ni in fused_fc or (ni in folded_conv and not is_train)) and ni not in deferred:
                deferred.add(ni)  # lowered with its SoftmaxOutput, or with its BatchNorm folded in
                return
            conv = bnfold.get(ni) if not is_train else None
            if conv in deferred:
                if fold_bn(ni, conv):
                    return
                lower_node(conv)  # these dtypes don't fold: the convolution as written
            fc = heads.get(ni)
            if fc in deferred:
                if lower_head(ni, fc):
                    return
                lower_node(fc)  # these values don't fit the fused head: the FC as written
            node, op = g.nodes[ni], ops[ni]
            entries = g.in_entries[ni]
            nargs = node.num_args()
            ins = [vals[e] for e in entries[:nargs]]
            if probes:
                ins = [x + probes[(ni, k)] if (ni, k) in probes else x for k, x in enumerate(ins)]
            aux_in = [vals[e] for e in entries[nargs:]]
            nkey = jax.random.fold_in(key, ni) if op.random else None
            try:
                outs, upd = op.lower(ins, aux_in, is_train, nkey)
            except MXNetError:
                raise
            except Exception as e:  # a JAX error deep in a trace: say which node it was
                raise MXNetError(f"{op.name} '{node.name}': lowering failed: {type(e).__name__}: {e}") from e
            off = g.offsets[ni]
            for k, o in enumerate(outs):
                vals[off + k] = o
            for k, v in zip(aux_of[ni], upd):
                new_aux[k] = v

        def fold_bn(ni, conv):
            ent = g.in_entries[ni]
            try:
                out = _bnfold.lower(ops[ni], ops[conv], [vals[e] for e in g.in_entries[conv]],
                                    [vals[e] for e in ent[:3]], [vals[e] for e in ent[3:]])
            except Exception as e:
                raise MXNetError(f"BatchNorm '{g.nodes[ni].name}' folded into Convolution "
                                 f"'{g.nodes[conv].name}': lowering failed: {type(e).__name__}: {e}") from e
            if out is None:
                return False
            vals[g.offsets[ni]] = out
            return True

        def lower_head(ni, fc):
            fc_ins = [vals[e] for e in g.in_entries[fc]]
            try:
                out = _heads.lower(ops[ni], ops[fc], fc_ins, vals[g.in_entries[ni][1]])
            except Exception as e:
                raise MXNetError(f"SoftmaxOutput '{g.nodes[ni].name}' with FullyConnected "
                                 f"'{g.nodes[fc].name}': lowering failed: {type(e).__name__}: {e}") from e
            if out is None:
                return False
            vals[g.offsets[ni]] = out
            return True

        if loops is not None:  # recurrences as lax.scan (rolled.py), the rest node by node
            loops.run(vals, key, is_train, lower_node, ops)
        else:
            for ni in op_nodes:
                lower_node(ni)
        if probed:
            return tuple(vals[e] for e in g.heads), tuple(new_aux), tuple(vals)
        return tuple(vals[e] for e in g.heads), tuple(new_aux)

    return forward


def make_train(g: Graph, diff_mask: tuple, add_mask: tuple, no_head: tuple, shapes=None, is_train=True):
    """forward + backward in one function.

    train(args, aux, key, head_grads, old_grads) -> (outputs, grads, new_aux)
    `head_grads` holds cotangents for the outputs not marked in `no_head` (loss heads ignore
    theirs; integer outputs have none).
    `grads` has one entry per differentiated argument; with grad_req 'add' the old
    gradient is added inside the function. `is_train=False` differentiates the inference
    forward (MXNet's `backward(is_train=False)`: Dropout is the identity).
    """
    forward = make_forward(g, shapes)
    diff_pos = tuple(k for k, m in enumerate(diff_mask) if m)

    def train(args, aux, key, head_grads, old_grads):
        def f(diff):
            full = list(args)
            for k, v in zip(diff_pos, diff):
                full[k] = v
            outs, new_aux = forward(tuple(full), aux, key, is_train)
            return outs, new_aux

        diff = tuple(args[k] for k in diff_pos)
        with jax.default_matmul_precision(matmul_precision()):  # the backward's products too
            return backward(f, diff, head_grads, old_grads)

    def backward(f, diff, head_grads, old_grads):
        outs, vjp, new_aux = jax.vjp(f, diff, has_aux=True)
        it = iter(head_grads)
        cot = []
        for o, skip in zip(outs, no_head):
            if not jnp.issubdtype(o.dtype, jnp.inexact):
                cot.append(np.zeros(o.shape, dtype=jax.dtypes.float0))
            elif skip:
                cot.append(jnp.ones_like(o))
            else:
                cot.append(next(it).astype(o.dtype))
        (grads,) = vjp(tuple(cot))
        old = iter(old_grads)
        grads = tuple(g_ + next(old) if add_mask[k] else g_ for k, g_ in zip(diff_pos, grads))
        return outs, grads, new_aux

    return train
