"""MXNet's control-flow operators: `_foreach`, `_while_loop`, `_cond`.

Each carries its subgraphs (ops/_subgraph.py); its inputs are the arrays the subgraphs
read, and `*_locs` parameters say which subgraph input each one feeds, as MXNet's
`control_flow.cc` does. `_foreach` lowers to `lax.scan`; `_while_loop` to `lax.while_loop`
where it is only run forward and to a masked `lax.scan` where it is differentiated
(ops/_while_lower.py), its step outputs padded with zeros to `max_iterations` rows (MXNet
leaves the padding unwritten); `_cond` to `lax.cond`.
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax import lax

from ..base import MXNetError
from . import _while_lower
from ._base import register
from ._subgraph import SubgraphOp, infer_sub, run_sub, unify
from ._while_lower import predicate as _pred


def _slice(kind, v):
    """One step's value of a value stacked along axis 0 (MXNet: a 1-d array's step is (1,))."""
    if kind != "shape" or v is None:
        return v
    if len(v) == 0:
        raise ValueError("a looped-over array must have at least one dimension, got shape ()")
    return tuple(v[1:]) if len(v) > 1 else (1,)


def _stack(kind, n, v):
    return v if kind != "shape" or v is None else (n,) + tuple(v)


def _check_pred(kind, v, what):
    if kind == "shape" and v is not None and all(v) and math.prod(v) != 1:
        raise ValueError(f"{what} must be a scalar (one element), got shape {tuple(v)}")


def _both(rule):
    """An op's shape and dtype rules from one generic `rule(kind, ins, outs)`."""
    def infer_shape(self, ins, outs):
        return rule(self, "shape", ins, outs)

    def infer_type(self, ins, outs):
        return rule(self, "dtype", ins, outs)
    return infer_shape, infer_type


@register
class _foreach(SubgraphOp):
    """Runs its subgraph once per slice of the data inputs along axis 0, carrying states."""
    num_args: int
    num_outputs: int
    num_out_data: int
    in_state_locs: tuple
    in_data_locs: tuple
    remain_locs: tuple
    subgraph_names = ("fn",)

    def arguments(self):
        return tuple(f"data{i}" for i in range(self.num_args - 1))

    def check_subgraphs(self):
        sub = self.subgraphs[0]
        n_in = len(sub.list_inputs())
        locs = (*self.in_data_locs, *self.in_state_locs, *self.remain_locs)
        if len(locs) != n_in or len(locs) != self.num_args - 1 or sorted(locs) != list(range(n_in)):
            raise MXNetError(f"_foreach: in_data_locs {list(self.in_data_locs)}, in_state_locs "
                             f"{list(self.in_state_locs)} and remain_locs {list(self.remain_locs)} must "
                             f"place each of the subgraph's {n_in} inputs once (num_args={self.num_args})")
        if len(sub) != self.num_outputs or len(self.in_state_locs) != self.num_outputs - self.num_out_data:
            raise MXNetError(f"_foreach: the subgraph has {len(sub)} outputs; num_outputs={self.num_outputs}, "
                             f"num_out_data={self.num_out_data} and {len(self.in_state_locs)} states")
        if not self.in_data_locs:
            raise MXNetError("_foreach: needs at least one data input (in_data_locs is empty)")

    def _rule(self, kind, ins, outs):
        nd, ns, nod = len(self.in_data_locs), len(self.in_state_locs), self.num_out_data
        n = 0
        if kind == "shape":
            for k, s in enumerate(list(ins[:nd]) + list(outs[:nod])):
                if s is not None and len(s) and s[0]:
                    if n and s[0] != n:
                        raise ValueError(f"the data inputs and outputs differ in length along axis 0: "
                                         f"{[tuple(x) if x is not None else None for x in ins[:nd]]}")
                    n = s[0]
        sub_in = [None] * (self.num_args - 1)
        for k, loc in enumerate(self.in_data_locs):
            sub_in[loc] = _slice(kind, ins[k])
        for k, loc in enumerate(self.in_state_locs):
            sub_in[loc] = unify(kind, ins[nd + k], outs[nod + k], f"loop state {k} (input and output)")
        for k, loc in enumerate(self.remain_locs):
            sub_in[loc] = ins[nd + ns + k]
        # the states' outputs are left to the body, so that a body that changes a state's
        # shape is named below rather than deep inside the subgraph
        sub_out = [_slice(kind, o) for o in outs[:nod]] + [None] * ns
        si, so = infer_sub(self.subgraphs[0], kind, sub_in, sub_out)
        states = [unify(kind, si[loc], so[nod + k], f"loop state {k}: the body takes one {kind} and returns another")
                  for k, loc in enumerate(self.in_state_locs)]
        new_ins = []
        for k, loc in enumerate(self.in_data_locs):
            one_d = kind == "shape" and ins[k] is not None and len(ins[k]) == 1
            new_ins.append((n,) if one_d else _stack(kind, n, si[loc]))
        new_ins += states + [si[loc] for loc in self.remain_locs]
        return new_ins, [_stack(kind, n, o) for o in so[:nod]] + states, []

    infer_shape, infer_type = _both(_rule)

    def lower(self, ins, aux, is_train, key):
        sub = self.subgraphs[0]
        nd, ns, nod = len(self.in_data_locs), len(self.in_state_locs), self.num_out_data
        data = tuple(x if x.ndim > 1 else x[:, None] for x in ins[:nd])
        remain = ins[nd + ns:]

        def step(carry, xs):
            i, sl = xs
            vals = [None] * (self.num_args - 1)
            for loc, x in zip(self.in_data_locs, sl):
                vals[loc] = x
            for loc, c in zip(self.in_state_locs, carry):
                vals[loc] = c
            for loc, r in zip(self.remain_locs, remain):
                vals[loc] = r
            outs = run_sub(sub, vals, None if key is None else jax.random.fold_in(key, i), is_train)
            return tuple(o.astype(c.dtype) for o, c in zip(outs[nod:], carry)), tuple(outs[:nod])

        n = data[0].shape[0]
        final, ys = lax.scan(step, tuple(ins[nd:nd + ns]), (jnp.arange(n, dtype=jnp.uint32), data), length=n)
        return list(ys) + list(final), aux


@register
class _while_loop(SubgraphOp):
    """Runs `func` while `cond` holds, at most `max_iterations` times."""
    num_args: int
    num_outputs: int
    num_out_data: int
    max_iterations: int
    cond_input_locs: tuple
    func_input_locs: tuple
    func_var_locs: tuple
    subgraph_names = ("cond", "func")

    def arguments(self):
        return tuple(f"data{i}" for i in range(self.num_args - 2))

    def check_subgraphs(self):
        cond, func = self.subgraphs
        n = self.num_args - 2
        if len(cond) != 1:
            raise MXNetError(f"_while_loop: the condition subgraph must have one output, has {len(cond)}")
        if len(func) != self.num_outputs or len(self.func_var_locs) != self.num_outputs - self.num_out_data:
            raise MXNetError(f"_while_loop: the body subgraph has {len(func)} outputs; num_outputs="
                             f"{self.num_outputs}, num_out_data={self.num_out_data}, "
                             f"{len(self.func_var_locs)} loop variables")
        if len(self.cond_input_locs) != len(cond.list_inputs()) or \
                len(self.func_input_locs) != len(func.list_inputs()):
            raise MXNetError("_while_loop: cond_input_locs / func_input_locs do not match the subgraphs' inputs")
        self._check_locs("cond_input_locs", self.cond_input_locs, n)
        self._check_locs("func_input_locs", self.func_input_locs, n)
        self._check_locs("func_var_locs", self.func_var_locs, len(self.func_input_locs))
        if self.max_iterations < 1:
            raise MXNetError(f"_while_loop: max_iterations must be at least 1, got {self.max_iterations}")

    def _var_pos(self):
        """Input position of each loop variable."""
        return [self.func_input_locs[loc] for loc in self.func_var_locs]

    def _rule(self, kind, ins, outs):
        cond, func = self.subgraphs
        nod = self.num_out_data
        new_ins = list(ins)
        for k, p in enumerate(self._var_pos()):
            new_ins[p] = unify(kind, new_ins[p], outs[nod + k], f"loop variable {k} (input and output)")
        f_in = [new_ins[p] for p in self.func_input_locs]
        f_out = [_slice(kind, o) for o in outs[:nod]] + [None] * len(self.func_var_locs)
        fi, fo = infer_sub(func, kind, f_in, f_out)
        for k, loc in enumerate(self.func_var_locs):
            fi[loc] = unify(kind, fi[loc], fo[nod + k], f"loop variable {k}: the body takes one {kind} and returns another")
        for p, v in zip(self.func_input_locs, fi):
            new_ins[p] = unify(kind, new_ins[p], v, f"input {p}")
        ci, co = infer_sub(cond, kind, [new_ins[p] for p in self.cond_input_locs], [None])
        _check_pred(kind, co[0], "the loop condition")
        for p, v in zip(self.cond_input_locs, ci):
            new_ins[p] = unify(kind, new_ins[p], v, f"input {p}")
        out_vals = [_stack(kind, self.max_iterations, o) for o in fo[:nod]] + [new_ins[p] for p in self._var_pos()]
        return new_ins, out_vals, []

    infer_shape, infer_type = _both(_rule)

    def lower(self, ins, aux, is_train, key):
        return _while_lower.lower(self, ins, is_train, key), aux


@register
class _cond(SubgraphOp):
    """Runs `then_branch` where the condition holds, else `else_branch`."""
    num_args: int
    num_outputs: int
    cond_input_locs: tuple
    then_input_locs: tuple
    else_input_locs: tuple
    subgraph_names = ("cond", "then_branch", "else_branch")

    def arguments(self):
        return tuple(f"data{i}" for i in range(self.num_args - 3))

    def check_subgraphs(self):
        pred, then, else_ = self.subgraphs
        n = self.num_args - 3
        if len(pred) != 1:
            raise MXNetError(f"_cond: the condition subgraph must have one output, has {len(pred)}")
        if len(then) != self.num_outputs or len(else_) != self.num_outputs:
            raise MXNetError(f"_cond: num_outputs={self.num_outputs} but the then-branch has {len(then)} "
                             f"outputs and the else-branch {len(else_)}")
        for what, locs, sub in (("cond_input_locs", self.cond_input_locs, pred),
                                ("then_input_locs", self.then_input_locs, then),
                                ("else_input_locs", self.else_input_locs, else_)):
            if len(locs) != len(sub.list_inputs()):
                raise MXNetError(f"_cond: {what} has {len(locs)} positions for {len(sub.list_inputs())} inputs")
            self._check_locs(what, locs, n)

    def _rule(self, kind, ins, outs):
        pred, then, else_ = self.subgraphs
        new_ins = list(ins)
        _, to = infer_sub(then, kind, [ins[p] for p in self.then_input_locs], outs)
        _, eo = infer_sub(else_, kind, [ins[p] for p in self.else_input_locs], to)
        merged = [unify(kind, a, b, f"output {k}: the then-branch and the else-branch give")
                  for k, (a, b) in enumerate(zip(to, eo))]
        for sub, locs in ((then, self.then_input_locs), (else_, self.else_input_locs)):
            si, _ = infer_sub(sub, kind, [new_ins[p] for p in locs], merged)
            for p, v in zip(locs, si):
                new_ins[p] = unify(kind, new_ins[p], v, f"input {p}")
        ci, co = infer_sub(pred, kind, [new_ins[p] for p in self.cond_input_locs], [None])
        _check_pred(kind, co[0], "the condition")
        for p, v in zip(self.cond_input_locs, ci):
            new_ins[p] = unify(kind, new_ins[p], v, f"input {p}")
        return new_ins, merged, []

    infer_shape, infer_type = _both(_rule)

    def lower(self, ins, aux, is_train, key):
        pred, then, else_ = self.subgraphs
        take = lambda locs: [ins[p] for p in locs]  # noqa: E731
        p = _pred(run_sub(pred, take(self.cond_input_locs), key, is_train)[0], "_cond: the condition")
        t_out = jax.eval_shape(lambda: run_sub(then, take(self.then_input_locs), key, is_train))

        def then_fn(_):
            return tuple(run_sub(then, take(self.then_input_locs), key, is_train))

        def else_fn(_):
            outs = run_sub(else_, take(self.else_input_locs), key, is_train)
            return tuple(o.astype(t.dtype) for o, t in zip(outs, t_out))

        return list(lax.cond(p, then_fn, else_fn, None)), aux
