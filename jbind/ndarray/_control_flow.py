"""`mx.nd.contrib.foreach`, `while_loop`, `cond`: the Python body run eagerly, as MXNet's.

Each step calls NDArray operators, so under `autograd.record()` the steps are recorded
like any other NDArray code and `backward()` reaches the loop's inputs.
"""
from __future__ import annotations

from ..symbol._control_flow import ControlFlowAssertion, ControlFlowError, regroup


def _flatten(args, what):
    from .ndarray import NDArray
    if isinstance(args, NDArray):
        return [args], 0
    if not isinstance(args, (list, tuple)):
        raise ControlFlowError(f"{what} must be an NDArray or a (nested) list of NDArrays, got "
                               f"{type(args).__name__}")
    flat, fmt = [], []
    for a in args:
        f, m = _flatten(a, what)
        flat += f
        fmt.append(m)
    return flat, fmt


def _scalar(x, type_, what):
    if hasattr(x, "asscalar"):
        if getattr(x, "size", 1) != 1:
            raise ControlFlowError(f"{what} must be a scalar (one element), got shape {tuple(x.shape)}")
        x = x.asscalar()
    try:
        return type_(x)
    except (TypeError, ValueError):
        raise ControlFlowError(f"cannot convert {what} to python {type_.__name__}") from None


def foreach(body, data, init_states):
    """Run `body(data[i], states) -> (outputs, states)` for each i along axis 0; the
    outputs of the steps stacked along a new axis 0 (MXNet's `mx.nd.contrib.foreach`)."""
    from .. import ndarray as nd
    flat, _ = _flatten(data, "foreach data")
    _flatten(init_states, "foreach init_states")
    if not flat:
        raise ControlFlowError("foreach: data must hold at least one NDArray")
    single = not isinstance(data, (list, tuple))
    states, steps, fmt = init_states, [], None
    _, init_fmt = _flatten(init_states, "foreach init_states")
    for i in range(flat[0].shape[0]):
        outs, states = body(data[i] if single else [d[i] for d in data], states)
        _, state_fmt = _flatten(states, "foreach body states")
        if state_fmt != init_fmt:
            raise ControlFlowAssertion(f"foreach: the body returned states of format {state_fmt} but "
                                   f"init_states has format {init_fmt}")
        outs, fmt = _flatten(outs, "foreach body outputs")
        steps.append(outs)
    if fmt is None:
        return [], states
    stacked = [nd.stack(*col) for col in zip(*steps)]
    return regroup(stacked, fmt)[0], states


def while_loop(cond, func, loop_vars, max_iterations=None):
    """Run `func(*loop_vars) -> (step_output, new_loop_vars)` while `cond(*loop_vars)`
    holds, at most `max_iterations` times (MXNet's `mx.nd.contrib.while_loop`). The step
    outputs are stacked along axis 0 and padded to `max_iterations` rows with zeros
    (MXNet pads with uninitialized memory); no step at all gives no outputs ([])."""
    from . import concat, zeros
    if max_iterations is None:
        raise ControlFlowError("while_loop: max_iterations should be specified")
    max_iterations = _scalar(max_iterations, int, "max_iterations")
    single = not isinstance(loop_vars, (list, tuple))
    loop_vars = [loop_vars] if single else list(loop_vars)
    if not loop_vars:
        raise ControlFlowError("while_loop: loop_vars should contain at least one element")
    steps, fmt = [], None
    while len(steps) < max_iterations and _scalar(cond(*loop_vars), bool, "the return value of cond"):
        got = func(*loop_vars)
        if not isinstance(got, (list, tuple)) or len(got) != 2:
            raise ControlFlowError("while_loop: func must return a pair (step_output, new_loop_vars)")
        step, new = ([] if x is None else list(x) if isinstance(x, tuple) else x for x in got)
        new = new if isinstance(new, list) else [new]
        if len(new) != len(loop_vars):
            raise ControlFlowError(f"while_loop: func returned {len(new)} loop variables, loop_vars has "
                                   f"{len(loop_vars)}")
        step, fmt = _flatten(step, "while_loop step_output")
        if steps and len(step) != len(steps[0]):
            raise ControlFlowError("while_loop: the number of step outputs changed between steps")
        steps.append(step)
        loop_vars = new
    stacked = []
    for k, col in enumerate(zip(*steps)):
        shapes = {tuple(x.shape) for x in col}
        if len(shapes) > 1:
            raise ControlFlowError(f"while_loop: step output {k} has inconsistent shapes "
                                   f"{[tuple(x.shape) for x in col]}")
        items = [x.expand_dims(0) for x in col]
        if len(col) < max_iterations:
            items.append(zeros((max_iterations - len(col),) + tuple(col[0].shape), ctx=col[0].context,
                               dtype=col[0].dtype))
        stacked.append(concat(*items, dim=0))
    outputs = regroup(stacked, fmt)[0] if fmt is not None else []
    return outputs, (loop_vars[0] if single else loop_vars)


def cond(pred, then_func, else_func):
    """`then_func()` if the one-element `pred` is nonzero, else `else_func()`
    (MXNet's `mx.nd.contrib.cond`)."""
    return then_func() if _scalar(pred, bool, "pred") else else_func()

