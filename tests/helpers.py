"""check_op: one helper that tests an op against a numpy reference, forward and gradient.

Inputs are drawn fresh; the gradient is checked against central finite differences of
the numpy reference in float64 (the math gradient), or against `ref_grad` for ops whose
MXNet gradient is not the math one (loss heads).
"""
from __future__ import annotations

import dataclasses
import os
from typing import Callable, Optional

import numpy as np
from hypothesis import settings

import jbind as mx

# The context the check_op samples and the golden tests bind on: cpu(0), or gpu(0) under
# JBIND_TEST_DEVICE=gpu (benchmarks/gpu_check.sh runs them so on a GPU machine).
CTX = mx.Context(os.environ.get("JBIND_TEST_DEVICE", "cpu"), 0)


@dataclasses.dataclass
class Case:
    id: str
    build: Callable[[], "mx.sym.Symbol"]
    ref: Callable[..., list]
    shapes: dict
    inputs: dict = dataclasses.field(default_factory=dict)   # name -> array or (lo, hi) or ("int", lo, hi)
    grad: bool = True
    ref_grad: Optional[Callable[..., dict]] = None            # (**inputs) -> {name: grad}, head grads ignored
    is_train: bool = False
    rtol: float = 1e-4
    atol: float = 1e-5
    grad_rtol: float = 2e-3
    grad_atol: float = 2e-4
    no_grad: tuple = ()                                       # arguments not differentiated (indices, labels)
    type_dict: Optional[dict] = None


def draw(shapes, spec, rng, dtypes=None):
    out = {}
    for name, shape in shapes.items():
        s = spec.get(name, (-1.0, 1.0))
        if isinstance(s, np.ndarray):
            out[name] = s
        elif s[0] == "int":
            out[name] = rng.integers(s[1], s[2], size=shape).astype(np.float64)
        else:
            out[name] = rng.uniform(s[0], s[1], size=shape)
    return out


def numeric_grad(f, inputs, name, eps=1e-6):
    x = inputs[name]
    g = np.zeros_like(x)
    it = np.nditer(x, flags=["multi_index"])
    for _ in it:
        i = it.multi_index
        old = x[i]
        x[i] = old + eps
        hi = f(inputs)
        x[i] = old - eps
        lo = f(inputs)
        x[i] = old
        g[i] = (hi - lo) / (2 * eps)
    return g


def check_op(case: Case, seed: int = 0):
    rng = np.random.default_rng(seed)
    sym = case.build()
    args = sym.list_arguments()
    arg_s, out_s, aux_s = sym.infer_shape(**case.shapes)
    assert arg_s is not None, f"{case.id}: shapes {case.shapes} do not determine the graph"
    vals = draw(dict(zip(args, arg_s)), case.inputs, rng)
    req = {n: ("null" if n in case.no_grad or not case.grad else "write") for n in args}
    exe = sym.simple_bind(CTX, grad_req=req, type_dict=case.type_dict, **case.shapes)
    for n, v in vals.items():
        exe.arg_dict[n][:] = v
    ref_in = {n: v.astype(np.float64) for n, v in vals.items()}
    expect = [np.asarray(o) for o in case.ref(**{k: v.copy() for k, v in ref_in.items()})]
    outs = exe.forward(is_train=case.is_train or case.grad)
    assert len(outs) == len(expect), f"{case.id}: {len(outs)} outputs, reference has {len(expect)}"
    for i, (o, e) in enumerate(zip(outs, expect)):
        assert o.shape == tuple(out_s[i]) == e.shape, f"{case.id}: output {i} shape {o.shape} vs {e.shape}"
        np.testing.assert_allclose(o.asnumpy(), e, rtol=case.rtol, atol=case.atol,
                                   err_msg=f"{case.id}: output {i}")
    if not case.grad:
        return
    # with ref_grad (the op's own gradient, not the math one) the head gradient is ones
    heads = [rng.uniform(-1, 1, size=e.shape) if case.ref_grad is None else np.ones(e.shape) for e in expect]
    if all(n.op is not None and n.op.is_loss for n, _ in sym._heads):
        exe.backward()
    else:
        exe.backward([mx.nd.array(h) for h in heads])
    if case.ref_grad is not None:
        want = case.ref_grad(**{k: v.copy() for k, v in ref_in.items()})
    else:
        def loss(inp):
            return sum(float(np.sum(np.asarray(o) * h)) for o, h in zip(case.ref(**inp), heads))
        want = {n: numeric_grad(loss, {k: v.copy() for k, v in ref_in.items()}, n)
                for n in args if req[n] == "write"}
    for n, w in want.items():
        np.testing.assert_allclose(exe.grad_dict[n].asnumpy(), w, rtol=case.grad_rtol, atol=case.grad_atol,
                                   err_msg=f"{case.id}: gradient of {n}")


def ops_in(sym) -> set:
    from jbind.symbol._node import topo_order
    return {n.op.name for n in topo_order(sym._heads) if n.op is not None}


def fuzz_settings(ci_examples: int, **kw) -> settings:
    """Settings of a fuzz test: `ci_examples` examples under the default 'ci' profile;
    JBIND_FUZZ_EXAMPLES=N runs N, HYPOTHESIS_PROFILE=long that profile's count (5000)."""
    n = os.environ.get("JBIND_FUZZ_EXAMPLES")
    profile = os.environ.get("HYPOTHESIS_PROFILE", "ci")
    if n:
        examples = int(n)
    elif profile != "ci":
        examples = max(ci_examples, settings.get_profile(profile).max_examples)
    else:
        examples = ci_examples
    return settings(max_examples=examples, **kw)


def raises_naming(fn, *needles, cls=None) -> str:
    """Call `fn`, which must raise `cls` (an MXNetError by default) whose message holds every
    one of `needles`; returns the message."""
    import pytest
    with pytest.raises(cls or mx.base.MXNetError) as ei:
        fn()
    msg = str(ei.value)
    for n in needles:
        assert n in msg, f"{n!r} not in error message:\n{msg}"
    return msg
