"""`mx.sym.contrib.foreach`, `while_loop`, `cond` (MXNet 1.9.1's signatures and semantics)."""
from __future__ import annotations

from .. import attribute
from ._control_flow import (ControlFlowAssertion, ControlFlowError, body_vars, check_symbols, cut, flatten, input_name,
                            make_node, outputs_graph, regroup, unique_name)
from .symbol import Symbol


def foreach(body, data, init_states, name="foreach"):
    """Run `body` over `data` along axis 0, as MXNet's `mx.sym.contrib.foreach`.

    `body(data_slice, states) -> (outputs, new_states)`; the outputs of every step are
    stacked along a new axis 0, the states of the last step returned. `data` and
    `init_states` are Symbols or nested lists of Symbols. Symbols the body uses from
    outside become inputs of the loop. Returns (outputs, states) in the body's format.
    """
    flat_data, data_fmt = flatten(data, "foreach data")
    check_symbols(flat_data, "foreach data")
    flat_init, init_fmt = flatten(init_states, "foreach init_states")
    check_symbols(flat_init, "foreach init_states")
    if not flat_data:
        raise ControlFlowError("foreach: data must hold at least one Symbol")
    sub_name = unique_name(name)
    with attribute.AttrScope(**{"__subgraph_name__": sub_name}):
        got = body(body_vars(flat_data, data_fmt), body_vars(flat_init, init_fmt))
        if not isinstance(got, (list, tuple)) or len(got) != 2:
            raise ControlFlowError("foreach: the body must return a pair (outputs, states), got "
                                   f"{type(got).__name__}")
        outs, out_fmt = flatten(got[0], "foreach body outputs")
        states, state_fmt = flatten(got[1], "foreach body states")
        if state_fmt != init_fmt:
            raise ControlFlowAssertion(f"foreach: the body returned states of format {state_fmt} "
                                       f"({len(states)} Symbols) but init_states has format {init_fmt} "
                                       f"({len(flat_init)} Symbols)")
        graph = outputs_graph(outs, sub_name, tuple(states))
    sub, feeds = cut(graph, sub_name)
    names = sub.list_inputs()
    locs = {n: k for k, n in enumerate(names)}
    data_names = [input_name(s) for s in flat_data]
    state_names = [input_name(s) for s in flat_init]
    for what, ns in (("data", data_names), ("state", state_names)):
        unused = [k for k, n in enumerate(ns) if n not in locs]
        if unused:
            raise ControlFlowAssertion(f"foreach: the loop body does not use {what} input(s) {unused}; "
                                       f"MXNet's foreach needs every {what} array used in the body")
    remain = [k for k, n in enumerate(names) if n not in data_names and n not in state_names]
    entries = [s._heads[0] for s in flat_data + flat_init] + [feeds[names[k]] for k in remain]
    ret = make_node("_foreach", [sub], entries, {
        "num_args": len(entries) + 1, "num_outputs": len(outs) + len(states), "num_out_data": len(outs),
        "in_state_locs": [locs[n] for n in state_names], "in_data_locs": [locs[n] for n in data_names],
        "remain_locs": remain})
    res = list(ret)
    return regroup(res[:len(outs)], out_fmt)[0], regroup(res[len(outs):], state_fmt)[0]


def _union(graphs, shared):
    """MXNet's input union of several subgraphs: -> (outer entries, per graph the positions
    of its inputs among them). An input whose name `shared(name)` finds among the keys of
    the entries taken so far reuses that entry's position; an entry taken is filed under
    the key `shared` gives for it (None: not shared)."""
    entries, where, per_graph = [], {}, []
    for sub, feeds in graphs:
        locs = []
        for n in sub.list_inputs():
            k = shared.lookup(n)
            if k is not None and k in where:
                locs.append(where[k])
                continue
            e = shared.entry(n) or feeds[n]
            k = shared.key(n, e)
            if k is not None:
                where[k] = len(entries)
            locs.append(len(entries))
            entries.append(e)
        per_graph.append(locs)
    return entries, per_graph


class _ByLoopVar:
    """while_loop: the loop variables are shared by cond and func (MXNet: by object)."""

    def __init__(self, names: dict):
        self.names = names

    def lookup(self, n):
        return n if n in self.names else None

    def entry(self, n):
        return self.names.get(n)

    def key(self, n, e):
        return n if n in self.names else None


class _ByOuterName:
    """cond: an input is shared where its name is the name of an outside symbol already
    taken (MXNet's name_to_input_vars): variables are, cut op outputs (`fc_output`) are not."""

    def lookup(self, n):
        return n

    def entry(self, n):
        return None

    def key(self, n, e):
        return e[0].name


def while_loop(cond, func, loop_vars, max_iterations=None, name="while_loop"):
    """Run `func` while `cond` holds, as MXNet's `mx.sym.contrib.while_loop`.

    `cond(*loop_vars)` returns a one-element Symbol; `func(*loop_vars)` returns
    (step_output, new_loop_vars). Returns (outputs, final loop_vars): each output stacks
    the step outputs along a new axis 0 of `max_iterations` rows, the rows past the last
    step being zeros (MXNet leaves them unwritten).
    """
    if max_iterations is None:
        raise ControlFlowError("while_loop: max_iterations should be specified")
    try:
        max_iterations = int(max_iterations.asscalar() if hasattr(max_iterations, "asscalar") else max_iterations)
    except (TypeError, ValueError):
        raise ControlFlowError(f"while_loop: cannot convert max_iterations={max_iterations!r} to int") from None
    flat_vars, var_fmt = flatten(loop_vars, "while_loop loop_vars")
    check_symbols(flat_vars, "while_loop loop_vars")
    if not flat_vars:
        raise ControlFlowError("while_loop: loop_vars should contain at least one element")

    def traced(base, run):
        sub_name = unique_name(base)
        with attribute.AttrScope(**{"__subgraph_name__": sub_name}):
            args = body_vars(flat_vars, var_fmt)
            outs, states = run(args if isinstance(args, list) else list(args))
            graph = outputs_graph(outs + states, sub_name)
        return cut(graph, sub_name), len(outs)

    def run_cond(args):
        p = cond(*args)
        if not isinstance(p, Symbol):
            raise ControlFlowError(f"while_loop: cond must return a Symbol, got {type(p).__name__}")
        return [p], []

    out_fmt = []

    def run_func(args):
        got = func(*args)
        if not isinstance(got, (list, tuple)) or len(got) != 2:
            raise ControlFlowError("while_loop: func must return a pair (step_output, new_loop_vars), got "
                                   f"{type(got).__name__}")
        step, new = ([] if x is None else list(x) if isinstance(x, tuple) else x for x in got)
        step, fmt = flatten(step, "while_loop step_output")
        new, _ = flatten(new, "while_loop new_loop_vars")
        if len(new) != len(flat_vars):
            raise ControlFlowError(f"while_loop: func returned {len(new)} loop variables, loop_vars has "
                                   f"{len(flat_vars)}")
        out_fmt.append(fmt)
        return step, new

    cond_g, _ = traced(name + "_cond", run_cond)
    func_g, n_out = traced(name + "_func", run_func)
    var_names = {input_name(s): s._heads[0] for s in flat_vars}
    entries, (cond_locs, func_locs) = _union([cond_g, func_g], _ByLoopVar(var_names))
    func_inputs = func_g[0].list_inputs()
    var_locs = []
    for k, s in enumerate(flat_vars):
        if input_name(s) not in func_inputs:
            raise ControlFlowError(f"while_loop: loop variable {k} ({s.name!r}) is not used by func")
        var_locs.append(func_inputs.index(input_name(s)))
    ret = list(make_node("_while_loop", [cond_g[0], func_g[0]], entries, {
        "num_args": len(entries) + 2, "num_outputs": n_out + len(flat_vars), "num_out_data": n_out,
        "max_iterations": max_iterations, "cond_input_locs": cond_locs, "func_input_locs": func_locs,
        "func_var_locs": var_locs}))
    outputs = regroup(ret[:n_out], out_fmt[0])[0]
    return outputs, regroup(ret[n_out:], var_fmt)[0]


def cond(pred, then_func, else_func, name="cond"):
    """`then_func()` where the one-element Symbol `pred` is nonzero, else `else_func()`, as
    MXNet's `mx.sym.contrib.cond`. Both branches must return the same number of Symbols,
    of the same shapes and dtypes. Returns the outputs in then_func's format."""
    if not isinstance(pred, Symbol):
        raise ControlFlowError(f"cond: pred must be a Symbol, got {type(pred).__name__}")

    def traced(base, run):
        sub_name = unique_name(base)
        with attribute.AttrScope(**{"__subgraph_name__": sub_name}):
            outs, fmt = flatten(run(), "cond outputs")
            check_symbols(outs, "cond outputs")
            graph = outputs_graph(outs, sub_name)
        return cut(graph, sub_name), len(outs), fmt

    pred_g, n_pred, _ = traced(name + "_pred", lambda: pred)
    if n_pred != 1:
        raise ControlFlowError("cond: pred should always be a single output")
    then_g, n_then, then_fmt = traced(name + "_then", then_func)
    else_g, n_else, _ = traced(name + "_else", else_func)
    if n_then != n_else:
        raise ControlFlowError(f"cond: then_func returned {n_then} outputs and else_func {n_else}")
    entries, (c_locs, t_locs, e_locs) = _union([pred_g, then_g, else_g], _ByOuterName())
    ret = make_node("_cond", [pred_g[0], then_g[0], else_g[0]], entries, {
        "num_args": len(entries) + 3, "num_outputs": n_then, "cond_input_locs": c_locs,
        "then_input_locs": t_locs, "else_input_locs": e_locs})
    return regroup(list(ret), then_fmt)[0]
