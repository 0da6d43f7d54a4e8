"""jbind-bench: the hand-written JAX baselines compute jbind's function, and the CLI's smoke run."""
import dataclasses
import json
import math
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jax_baselines as jb
import jbind as mx
from jbind.bench import BenchError, Config, Figure, expected_figures
from jbind.bench._cli import run as cli_run
from jbind.bench._setup import lowering, loop_switch, rnn_lm
from models import sym_gen_factory

L, H, E, V, N, T = 2, 8, 6, 11, 3, 4
LOWERINGS = [True, False] if loop_switch() is not None else [None]
MODELS = {"seed": sym_gen_factory, "rnn": rnn_lm}


def _batch(seed=0):
    rng = np.random.default_rng(seed)
    return (rng.integers(0, V, (N, T)).astype(np.float32), rng.integers(0, V, (N, T)).astype(np.float32))


@pytest.mark.parametrize("rolled", LOWERINGS)
@pytest.mark.parametrize("model", sorted(MODELS))
def test_baseline_matches_jbind_outputs_and_gradients(model, rolled):
    params = jb.init_params(L, H, E, V, seed=1, scale=0.5)
    data, label = _batch()
    with lowering(rolled):
        exe = MODELS[model](mx, L, H, E, V)(T).simple_bind(mx.cpu(), data=(N, T), softmax_label=(N, T))
        assert set(exe.arg_dict) - {"data", "softmax_label"} == set(params)
        for name, value in params.items():
            exe.arg_dict[name][:] = value
        exe.arg_dict["data"][:] = data
        exe.arg_dict["softmax_label"][:] = label
        exe.forward(is_train=True)
        exe.backward()
    probs, grads = jb.make_grad()(params, jnp.asarray(data), jnp.asarray(label))
    ce_grads = jax.grad(jb.loss)(params, jnp.asarray(data), jnp.asarray(label))  # the head's gradient is CE's
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), np.asarray(probs), rtol=1e-5, atol=1e-5)
    for name in params:
        np.testing.assert_allclose(exe.grad_dict[name].asnumpy(), np.asarray(grads[name]), rtol=1e-5, atol=1e-5,
                                   err_msg=name)
        np.testing.assert_allclose(np.asarray(ce_grads[name]), np.asarray(grads[name]), rtol=1e-5, atol=1e-5,
                                   err_msg=name)


def test_baseline_sgd_step_matches_module_train_step():
    """The `step` and `train` baselines apply jbind's SGD: rescale, wd on *_weight only."""
    gen = sym_gen_factory(mx, L, H, E, V)
    mod = mx.mod.BucketingModule(lambda t: (gen(t), ("data",), ("softmax_label",)), default_bucket_key=T)
    mod.bind([("data", (N, T))], [("softmax_label", (N, T))])
    mod.init_params(mx.init.Uniform(0.5))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1, "wd": 0.01})
    before = {k: v.asnumpy() for k, v in mod.get_params()[0].items()}
    data, label = _batch(3)
    mod.train_step(mx.io.DataBatch([mx.nd.array(data)], [mx.nd.array(label)], bucket_key=T,
                                   provide_data=[mx.io.DataDesc("data", (N, T))],
                                   provide_label=[mx.io.DataDesc("softmax_label", (N, T))]))
    after = {k: v.asnumpy() for k, v in mod.get_params()[0].items()}
    step = jb.make_train_step(lr=0.1, wd=0.01, rescale_grad=1.0 / N, donate=False)
    new, probs = step(before, jnp.asarray(data), jnp.asarray(label))
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), np.asarray(probs), rtol=1e-5, atol=1e-5)
    for name in before:
        np.testing.assert_allclose(after[name], np.asarray(new[name]), rtol=1e-5, atol=1e-6, err_msg=name)


def test_perplexity_terms_match_the_metric():
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(V), N * T).astype(np.float32)
    label = rng.integers(0, V, (N, T)).astype(np.float32)
    metric = mx.metric.Perplexity(0)
    metric.update([mx.nd.array(label)], [mx.nd.array(probs)])
    loss, num = jb.perplexity_terms(probs, label, ignore_label=0)
    assert metric.get()[1] == pytest.approx(math.exp(loss / num), rel=1e-6)


def test_plot_refuses_a_command_without_charts(tmp_path):
    with pytest.raises(BenchError, match="matplotlib|measures neither"):
        cli_run(["bind", "--quick", "--plot", str(tmp_path / "x.png")])


def test_plot_without_matplotlib_says_how_to_install(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(BenchError, match=r"pip install 'jbind\[bench\]'"):
        cli_run(["step", "--quick", "--plot", str(tmp_path / "x.png")])
    assert not (tmp_path / "x.png").exists()


def test_plot_draws_a_png(tmp_path):
    import matplotlib  # noqa: F401  (in the test extra: the plot must be drawn in CI)
    from jbind.bench._plot import plot
    figs = [Figure("compile.rolled.T10", "c", "s", [1.0], [0.5]), Figure("compile.unrolled.T10", "c", "s", [3.0], [0.5]),
            Figure("compile.rolled.T20", "c", "s", [1.1], [0.6]), Figure("step.T10", "s", "ms", [50.0], [45.0]),
            Figure("train.tokens_per_s", "t", "tokens/s", [4000.0], [4500.0])]
    plot(str(tmp_path / "bench.png"), figs, batch=32)
    assert (tmp_path / "bench.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _check_summary(d, where):
    xs = d["samples"]
    assert xs and all(math.isfinite(x) for x in xs), where
    assert d["n"] == len(xs) and d["min"] <= d["median"] <= d["max"], where


def test_cli_all_quick_writes_every_figure(tmp_path):
    out = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, "-m", "jbind.bench", "all", "--quick", "--peers", "none", "--json",
                           str(out)], capture_output=True, text=True, timeout=240, env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads(out.read_text())   # the peers (tests/test_train_peers.py) need MXNet and PyTorch
    assert sorted(doc["figures"]) == sorted(expected_figures(dataclasses.replace(Config.quick_config(),
                                                                                 train_peers="none")))
    assert "peers not run (--peers none)" in doc["figures"]["train.tokens_per_s"]["note"]
    without_baseline = {"step.overhead", "bind.1ctx.cache_hits_warm", "bind.2ctx.cache_hits_warm"}
    for name, fig in doc["figures"].items():
        _check_summary(fig, name)
        assert ("baseline" in fig) == (name not in without_baseline), name
        if "baseline" in fig:
            _check_summary(fig["baseline"], name + " baseline")
    assert doc["meta"]["quick"] and doc["meta"]["command"] == "all"
    for title in ("bind:", "compile:", "train:", "step:", "memory:"):
        assert title in proc.stdout
    figs = doc["figures"]
    assert figs["bind.1ctx.compiles_warm"]["median"] == 0          # cached buckets never recompile
    assert figs["memory.store_kg"]["median"] == figs["memory.store_kg"]["baseline"]["median"]  # one copy


def test_num_layers_option_reaches_the_config_and_is_checked(monkeypatch):
    from jbind.bench import _cli
    seen = {}

    class Stop(Exception):
        pass

    def fake_run(cfg):
        seen["lm"] = cfg.lm_model
        raise Stop
    monkeypatch.setattr(_cli._module("train"), "run", fake_run)
    with pytest.raises(Stop):
        cli_run(["train", "--quick", "--num-layers", "5"])
    assert seen["lm"][0] == 5
    with pytest.raises(BenchError, match="--num-layers 0"):
        cli_run(["train", "--quick", "--num-layers", "0"])
