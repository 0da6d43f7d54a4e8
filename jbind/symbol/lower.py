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
from . import _bnfold, _heads, _int_grad, rolled
from .graph import Graph


def matmul_precision() -> str:
    """The precision graphs are traced with: JAX's `jax_default_matmul_precision` where the
    user set one, else full float32. MXNet's float32 products and convolutions are full
    float32; JAX's default lets a GPU round their inputs to TF32 (about 3e-4 relative error)."""
    return jax.config.jax_default_matmul_precision or "float32"


def make_forward(g: Graph, shapes=None, probed=False, carry=False):
    """`shapes`: the inferred shape of every entry, passed to `Op.specialize`.

    With `probed` (the executor monitor's lowering, node by node, nothing fused):
    forward(args, aux, key, is_train, probes) -> (outputs, new_aux, every entry's value),
    where `probes` maps (node index, argument position) to an array added to that input
    edge, so the gradient with respect to a zero probe is what flows back along that edge.

    With `carry` (training), integers that move only through Cast are carried as floats
    (`_int_grad`): forward(..., carried=positions of arguments given as float carriers)."""
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

    carry_nodes = _int_grad.carried_cast_outputs(g) if carry else set()

    def forward(args, aux, key, is_train, probes=None, carried=()):
        with jax.default_matmul_precision(matmul_precision()):
            return run(args, aux, key, is_train, probes, carried)

    def run(args, aux, key, is_train, probes, carried):
        vals = [None] * g.num_entries
        floats = set()  # entries holding integers carried as floats
        for vi, k in arg_pos.items():
            vals[g.offsets[vi]] = args[k]
            if k in carried:
                floats.add(g.offsets[vi])
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
            if op.name == "Cast" and (ni in carry_nodes or entries[0] in floats):
                carried_in = entries[0] in floats
                x = ins[0]
                if carried_in or jnp.issubdtype(x.dtype, jnp.inexact):
                    vals[g.offsets[ni]] = _int_grad.cast(x, op.dtype, carried_in)
                else:  # an integer from elsewhere: no gradient to carry
                    vals[g.offsets[ni]] = x.astype(op.dtype).astype(_int_grad.carrier_dtype(x.dtype))
                if ni in carry_nodes:
                    floats.add(g.offsets[ni])
                return
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
    forward = make_forward(g, shapes, carry=True)
    diff_pos = tuple(k for k, m in enumerate(diff_mask) if m)
    owner = {g.offsets[ni] + k: ni for ni, n in enumerate(g.nodes) for k in range(n.num_outputs())}
    carried_out = {i: np.dtype(g.nodes[owner[e]].op.dtype) for i, e in enumerate(g.heads)
                   if owner[e] in _int_grad.carried_cast_outputs(g)}

    def train(args, aux, key, head_grads, old_grads):
        # integer arguments differentiated (through Cast only) travel as float carriers
        ints = {k: args[k].dtype for k in diff_pos if not jnp.issubdtype(args[k].dtype, jnp.inexact)}

        def f(diff):
            full = list(args)
            for k, v in zip(diff_pos, diff):
                full[k] = v
            outs, new_aux = forward(tuple(full), aux, key, is_train, carried=frozenset(ints))
            return outs, new_aux

        diff = tuple(args[k].astype(_int_grad.carrier_dtype(args[k].dtype)) if k in ints else args[k]
                     for k in diff_pos)
        with jax.default_matmul_precision(matmul_precision()):  # the backward's products too
            outs, grads, new_aux = backward(f, diff, head_grads, old_grads, ints)
        outs = tuple(o.astype(carried_out[i]) if i in carried_out else o for i, o in enumerate(outs))
        return outs, grads, new_aux

    def backward(f, diff, head_grads, old_grads, ints):
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
        grads = tuple(g_.astype(ints[k]) if k in ints else g_ for k, g_ in zip(diff_pos, grads))
        old = iter(old_grads)
        grads = tuple(g_ + next(old) if add_mask[k] else g_ for k, g_ in zip(diff_pos, grads))
        return outs, grads, new_aux

    return train
