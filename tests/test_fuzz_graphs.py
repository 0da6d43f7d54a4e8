"""Random symbol graphs (tests/fuzz_graphs.py): jbind's forward matches a numpy evaluation
of the same graph, or jbind raises an MXNetError with a message; never another
exception, a crash or a hang.

CI runs a bounded, derandomized number of examples; for a long run see the README
(Reliability).
"""
import contextlib
import signal
import threading
import warnings

import numpy as np
from hypothesis import event, given, strategies as st

import jbind as mx
from fuzz_graphs import build, evaluate, one_step, recipes, table, tolerance
from helpers import fuzz_settings
from jbind.ops import REGISTRY


@contextlib.contextmanager
def time_limit(seconds):
    """A hang becomes a TimeoutError (main thread only, where SIGALRM is delivered)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def fire(*_):
        raise TimeoutError(f"no result after {seconds} s")
    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def run(recipe, seed, train=False, via_json=False):
    """Build, infer, bind, set inputs and run the graph; -> outputs, or the MXNetError raised."""
    rng = np.random.default_rng(seed)
    inputs = {lf.name: lf.draw(rng) for lf in recipe.leaves if lf.name}
    with warnings.catch_warnings(record=True) as caught, time_limit(120):
        warnings.simplefilter("always")
        try:
            sym = build(recipe)
            if via_json:
                sym = mx.sym.load_json(sym.tojson())
            shapes = recipe.shapes()
            arg_shapes, out_shapes, _ = sym.infer_shape(**shapes)
            assert arg_shapes is not None, f"shapes not inferred: {[str(w.message) for w in caught]}"
            req = {n: "null" if not train or n not in inputs or _is_int(recipe, n) else "write"
                   for n in sym.list_arguments()}
            exe = sym.simple_bind(mx.cpu(), grad_req=req, **shapes)
            for n, a in exe.arg_dict.items():
                a[:] = inputs[n]
            outs = [o.asnumpy() for o in exe.forward(is_train=train)]
            if train:
                exe.backward([mx.nd.ones(o.shape) for o in outs])
                for n, s in zip(sym.list_arguments(), arg_shapes):
                    if req[n] == "write":
                        assert exe.grad_dict[n].shape == tuple(s)
        except mx.base.MXNetError as e:
            return None, e, inputs
    assert not caught, [str(w.message) for w in caught]
    return outs, None, inputs


def _is_int(recipe, name):
    return any(lf.ints for lf in recipe.leaves if lf.name == name)


def check(recipe, seed, train=False, via_json=False) -> str:
    """The property; -> what happened, for hypothesis' statistics."""
    outs, err, inputs = run(recipe, seed, train, via_json)
    what = f"{len(recipe.live)} live steps, " + (f"invalid, {type(err).__name__}" if recipe.bad else "valid")
    if err is not None:
        assert str(err).strip(), f"{type(err).__name__} without a message"
        assert recipe.bad, f"a valid graph was refused: {type(err).__name__}: {err}\n{recipe.describe()}"
        return what
    assert not recipe.bad, f"an invalid graph ({recipe.bad}) was accepted\n{recipe.describe()}"
    want = evaluate(recipe, inputs)
    assert len(outs) == len(want)
    for k, (o, w, i) in enumerate(zip(outs, want, recipe.heads)):
        assert o.shape == w.shape, f"head {k}: shape {o.shape}, numpy {w.shape}\n{recipe.describe()}"
        assert o.dtype == np.float32
        np.testing.assert_allclose(o, w, rtol=1e-4, atol=tolerance(recipe.vals[i]),
                                   err_msg=f"head {k}\n{recipe.describe()}")
    return what


@fuzz_settings(150)
@given(recipes(), st.integers(0, 2 ** 32 - 1), st.sampled_from(["infer"] * 4 + ["train", "json"]))
def test_random_graphs_match_numpy_or_raise_mxnet_error(recipe, seed, mode):
    event(check(recipe, seed, train=mode == "train" and not recipe.random, via_json=mode == "json"))


def test_the_op_table_covers_registered_ops():
    ops = table()
    assert not sorted(set(ops) - set(REGISTRY)), "table names must be registered op names"
    assert len(ops) >= 150, f"only {len(ops)} ops in the fuzz table"


def test_every_table_op_runs_valid_and_invalid():
    """Each builder on fixed draws, once valid and once invalid: the whole table, every run."""
    failures = []
    for name in sorted(table()):
        for bad in (False, True):
            recipe = one_step(name, bad, seed=len(name))
            try:
                assert recipe.steps, "the builder emitted nothing"
                check(recipe, seed=0)
            except Exception as e:  # collected: one run maps the whole table
                failures.append(f"{name} ({'invalid' if bad else 'valid'}): {type(e).__name__}: {e}")
    assert not failures, "\n\n".join(failures)
