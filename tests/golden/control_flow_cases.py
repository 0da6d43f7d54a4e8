"""Graphs with control flow for the MXNet goldens (make_control_flow_golden.py,
tests/test_control_flow_golden.py). `mx` is mxnet or jbind; each case builds all its nodes
under the caller's NameManager, so the names do not depend on what ran before."""
import numpy as np


def cases(mx):
    """name -> (build() -> Symbol, {input: shape}). A while_loop's outputs are cut to the
    rows the loop wrote (MXNet leaves the padding rows unwritten)."""
    sym = mx.sym

    def foreach_rnn():
        data, h, w = sym.var("data"), sym.var("h"), sym.var("w")
        fc = sym.FullyConnected(h, num_hidden=3, name="fc")  # an op output used inside: cut

        def step(x, states):
            nh = sym.tanh(x * w + states[0] + fc)
            return nh * 2, [nh]
        outs, states = sym.contrib.foreach(step, data, [h], name="rnn")
        return sym.Group([outs, states[0]])

    def foreach_two_data():
        a, b, s = sym.var("a"), sym.var("b"), sym.var("s")

        def step(xs, states):
            out = xs[1] * 2 + states[0] * xs[0]
            return [out, out + 1], [out * 0.5]
        outs, states = sym.contrib.foreach(step, [a, b], [s])
        return sym.Group(outs + states)

    def nested_foreach():
        d, s = sym.var("d"), sym.var("s")

        def outer(x, states):
            def inner(y, st):
                return y + st[0], [st[0] * 0.9 + y]
            o, st = sym.contrib.foreach(inner, x, states)
            return o * 2, st
        outs, states = sym.contrib.foreach(outer, d, [s])
        return sym.Group([outs, states[0]])

    def while_sum():
        i, s, f = sym.var("i"), sym.var("s"), sym.var("f")
        outs, (ri, rs) = sym.contrib.while_loop(
            lambda i, s: i <= 5, lambda i, s: ([s * f], [i + 1, s + i * f]), [i, s], max_iterations=8)
        return sym.Group([outs[0].slice_axis(axis=0, begin=0, end=5), ri, rs])

    def cond_branches():
        a, b = sym.var("a"), sym.var("b")
        (out,) = sym.contrib.cond(sym.sum(a * b) < 5, lambda: [(a + 5) * (b + 5)], lambda: [(a - 5) * (b - 5)])
        return out

    return {
        "foreach_rnn": (foreach_rnn, {"data": (4, 2, 3), "h": (2, 3), "w": (2, 3), "fc_weight": (3, 3),
                                      "fc_bias": (3,)}),
        "foreach_two_data": (foreach_two_data, {"a": (3, 2), "b": (3, 2), "s": (2,)}),
        "nested_foreach": (nested_foreach, {"d": (3, 4, 2), "s": (2,)}),
        "while_sum": (while_sum, {"i": (1,), "s": (1,), "f": (1,)}),
        "cond_then": (cond_branches, {"a": (1,), "b": (1,)}),
    }


def inputs(name, shapes):
    """The values each case binds: seeded by the case's name."""
    rng = np.random.default_rng(sum(map(ord, name)))
    vals = {k: rng.uniform(-1, 1, s).astype(np.float32) for k, s in sorted(shapes.items())}
    if name == "while_sum":
        vals.update(i=np.array([1.0], np.float32), s=np.array([0.5], np.float32))
    return vals
