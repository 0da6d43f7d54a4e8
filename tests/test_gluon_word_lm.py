"""examples/gluon_word_lm.py (issue #21 part 10): the Gluon LSTM language model trains on
a small corpus, its perplexity drops, and the hybridized model compiles once per shape
and mode however many segments and epochs it runs."""
import importlib.util
import os

import numpy as np
import pytest

import jbind as mx

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(os.path.dirname(HERE), "examples", "gluon_word_lm.py")


@pytest.fixture(scope="module")
def lm():
    spec = importlib.util.spec_from_file_location("gluon_word_lm", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _corpus(path, n, rng):
    sentences = ["the cat sat on a mat", "a dog ran to the cat", "see the big red dog"]
    with open(path, "w") as f:
        f.writelines(sentences[i] + "\n" for i in rng.integers(0, 3, size=n))


def test_batchify_makes_columns_and_get_batch_shifts_by_one(lm):
    ids = np.arange(23, dtype=np.float32)
    b = lm.batchify(ids, 4)  # 5 rows; the 3 ids that do not fill a row are dropped
    assert b.shape == (5, 4)
    np.testing.assert_array_equal(b.asnumpy()[:, 1], np.arange(5, 10))  # each column a contiguous stream
    data, target = lm.get_batch(b, 0, 3)
    assert data.shape == (3, 4) and target.shape == (12,)
    np.testing.assert_array_equal(target.asnumpy(), b.asnumpy()[1:4].reshape(-1))
    data, target = lm.get_batch(b, 3, 3)  # the last segment is shorter: rows 3 .. 3 predict row 4
    assert data.shape == (1, 4)
    np.testing.assert_array_equal(target.asnumpy(), b.asnumpy()[4])
    with pytest.raises(ValueError, match="too short"):
        lm.batchify(ids[:5], 4)


def test_detach_keeps_values_and_cuts_the_graph(lm):
    w = mx.nd.array([2.0, 3.0])
    w.attach_grad()
    with mx.autograd.record():
        h = [w * w, w * 4]
        cut = lm.detach(h)
        loss = (cut[0] * w).sum() + cut[1].sum()
    loss.backward()
    np.testing.assert_allclose(cut[0].asnumpy(), [4.0, 9.0])
    np.testing.assert_allclose(w.grad.asnumpy(), [4.0, 9.0])  # only the direct use of w: the states are constants


def test_training_lowers_perplexity_and_compiles_once_per_shape(lm, tmp_path):
    rng = np.random.default_rng(0)
    _corpus(tmp_path / "train.txt", 200, rng)
    _corpus(tmp_path / "valid.txt", 40, rng)
    args = lm.build_parser().parse_args(
        ["--data", str(tmp_path), "--epochs", "2", "--log-interval", "3", "--emsize", "16", "--nhid", "16",
         "--nlayers", "1", "--batch_size", "4", "--bptt", "5", "--max-batches", "6", "--dropout", "0"])
    lines = []
    with mx.compile.count_compiles() as n:
        result = lm.train(args, log=lines.append)
    # 12 training segments of one shape and the validation segments of another: one compile
    # of forward + backward, one of inference.
    assert n() == 2, mx.compile.misses()[-n():]
    assert result["val_ppl"][1] < 0.85 * result["val_ppl"][0], result
    assert result["val_ppl"][1] < 13  # below the uniform guess over the 13-word vocabulary
    assert len(result["tokens_per_s"]) == 4 and all(t > 0 for t in result["tokens_per_s"])
    assert any("validation ppl" in s for s in lines) and any("tokens/s" in s for s in lines)


def test_tied_weights_share_the_embedding(lm):
    model = lm.RNNModel(11, 8, 8, 1, dropout=0.0, tie_weights=True)
    model.initialize()
    model.hybridize()
    hidden = model.begin_state(func=mx.nd.zeros, batch_size=2)
    out, hidden = model(mx.nd.zeros((3, 2)), hidden)
    assert out.shape == (6, 11) and hidden[0].shape == (1, 2, 8)
    assert model.decoder.weight is model.encoder.weight
    with pytest.raises(ValueError, match="--tied"):
        lm.RNNModel(11, 8, 6, 1, tie_weights=True)


def test_bench_reads_steady_speed_and_final_perplexity_from_each_log():
    import gluon_lm_bench as bench
    log = "\n".join(["vocabulary 9 words", "[Epoch 0 Batch 2/8] loss 5.00, ppl 148.41, 10 tokens/s",
                     "[Epoch 0 Batch 4/8] loss 4.00, ppl 54.60, 300 tokens/s",
                     "[Epoch 0 Batch 6/8] loss 3.00, ppl 20.09, 500 tokens/s",
                     "[Epoch 0 Batch 8/8] loss 3.00, ppl 20.09, 400 tokens/s",
                     "[Epoch 0] validation loss 2.90, validation ppl 18.17",
                     "[Epoch 1] validation loss 2.80, validation ppl 16.44"])
    r = bench.parse(log, warmup=1)
    assert r["tokens_per_s"] == [10, 300, 500, 400] and r["steady_tokens_per_s"] == 400  # 10 is warm-up
    assert r["final_val_ppl"] == 16.44 and r["train_ppl"][0] == 148.41


def test_bench_runs_one_script_for_jbind_and_mxnet_pinned_to_one_core():
    import gluon_lm_bench as bench
    args = bench.build_parser().parse_args(["--core", "3", "--max-batches", "7", "--python-mxnet", "/mx/python"])
    j, m, t = (bench.command(lib, args) for lib in bench.LIBRARIES)
    assert j[j.index(bench.EXAMPLE) + 1:] == m[m.index(bench.EXAMPLE) + 2:]  # same flags; MXNet adds --mxnet
    assert m[m.index(bench.EXAMPLE) + 1] == "--mxnet" and "/mx/python" in m
    assert bench.TORCH_SCRIPT in t and t[t.index("--max-batches") + 1] == "7"
    if j[0] == "taskset":
        assert j[:3] == ["taskset", "-c", "3"] and t[:3] == ["taskset", "-c", "3"]
    assert all(bench.environment(lib)["OMP_NUM_THREADS"] == "1" for lib in bench.LIBRARIES)
    assert bench.environment("jbind")["PYTHONPATH"].split(os.pathsep)[0] == bench.ROOT


def test_jbind_bench_has_a_gluon_command_with_its_figures():
    from jbind.bench import _cli
    from jbind.bench._setup import Config
    assert _cli.parser().parse_args(["gluon", "--quick"]).command == "gluon"
    assert _cli.expected_figures(Config.quick_config(), ("gluon",)) == [
        "gluon.tokens_per_s_vs_mxnet", "gluon.tokens_per_s_vs_torch", "gluon.val_ppl_vs_mxnet", "gluon.val_ppl_vs_torch"]


def test_bench_over_seeds_gives_medians_ranges_and_the_perplexity_verdict():
    import gluon_lm_bench as bench
    run = lambda tps, ppl: {"steady_tokens_per_s": tps, "final_val_ppl": ppl, "seconds": 10.0, "tokens_per_s": [tps]}
    mx_runs = [run(100, 500.0), run(110, 480.0), run(90, 520.0)]
    j = bench.summarize([run(200, 490.0), run(210, 470.0), run(190, 530.0)])
    m = bench.summarize(mx_runs)
    assert m["steady_tokens_per_s"] == 100 and m["val_ppl_range"] == [480.0, 520.0] and m["final_val_ppl"] == 500.0
    assert len(m["runs"]) == 3 and bench.summarize(mx_runs[:1]) is mx_runs[0]  # one seed: the run as it was
    verdict = bench.ppl_verdict({"jbind": j, "mxnet": m})
    assert "490.00" in verdict and "inside" in verdict
    far = bench.summarize([run(200, 600.0), run(200, 610.0)])
    assert "OUTSIDE" in bench.ppl_verdict({"jbind": far, "mxnet": m})
    assert "OUTSIDE" in bench.table({"jbind": far, "mxnet": m}) and "2.00x" in bench.table({"jbind": far, "mxnet": m})
    assert bench.ppl_verdict({"jbind": mx_runs[0], "mxnet": mx_runs[1]}) == ""  # one seed: no verdict
    args = bench.build_parser().parse_args(["--seeds", "1,2,3"])
    assert args.seeds == "1,2,3"


def test_bench_runs_the_imperative_jbind_on_request():
    import gluon_lm_bench as bench
    args = bench.build_parser().parse_args([])
    cmd = bench.command("jbind-imperative", args)
    assert cmd[cmd.index(bench.EXAMPLE) + 1] == "--no-hybridize" and "--mxnet" not in cmd
    assert bench.environment("jbind-imperative")["PYTHONPATH"].split(os.pathsep)[0] == bench.ROOT
    assert "jbind-imperative" not in bench.build_parser().parse_args([]).only  # not in the default run
