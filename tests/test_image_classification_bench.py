"""benchmarks/image_classification.py without MXNet or a network: a fake copy of MXNet's scripts
and a fake MXNet interpreter check the runs, the Speedometer parsing, the medians and ratios and
the report's structure; the fallback (jbind's own loop) runs at a tiny size."""
import json
import os
import stat
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
import image_classification as ic  # noqa: E402

FAKE_TRAIN = '''import argparse, importlib.util, logging
logging.basicConfig(level=logging.DEBUG)
p = argparse.ArgumentParser()
for a in ("--benchmark", "--batch-size", "--num-examples", "--disp-batches", "--num-layers"):
    p.add_argument(a, type=int)
for a in ("--network", "--image-shape"):
    p.add_argument(a)
p.add_argument("--num-epochs", type=int)
p.add_argument("--num-classes", type=int)
a = p.parse_args()
assert a.benchmark == 1 and a.network == "resnet" and a.num_layers == 18 and a.image_shape == "3,32,32"
origin = importlib.util.find_spec("mxnet").origin   # the alias package or the fake MXNet, not imported
base = 200 if "fakemx" not in origin else 100
logging.debug("noise: Speed: 1 samples/sec is not a Speedometer line")
for i in range(1, a.num_examples // a.batch_size):
    if i % a.disp_batches == 0:
        logging.info("Epoch[0] Batch [%d-%d]\\tSpeed: %.2f samples/sec\\taccuracy=0.5", i - a.disp_batches, i,
                     base * a.batch_size + i)
'''
FAKE_SCORE = '''import mxnet as mx
import mxnet.gluon.model_zoo.vision as models
def get_symbol(network, batch_size, dtype):
    return None, [("data", (batch_size, 3, 224, 224))]
def score(network, dev, batch_size, num_batches, dtype):
    sym, shapes = get_symbol(network, batch_size, dtype)
    assert network == "resnet-18" and shapes[0][1] == (batch_size, 3, 32, 32) and num_batches == 10
    return (50.0 if mx.__name__ == "jbind" else 25.0) * batch_size
'''


@pytest.fixture
def fakes(tmp_path):
    scripts = tmp_path / "mxnet-1.9.1" / "example" / "image-classification"
    scripts.mkdir(parents=True)
    (scripts / "train_imagenet.py").write_text(FAKE_TRAIN)
    (scripts / "benchmark_score.py").write_text(FAKE_SCORE)
    pkg = tmp_path / "fakemx" / "mxnet"
    (pkg / "gluon" / "model_zoo").mkdir(parents=True)
    (pkg / "__init__.py").write_text("__version__ = '1.9.1'\ndef cpu():\n    return 'cpu'\n")
    (pkg / "gluon" / "__init__.py").write_text("")
    (pkg / "gluon" / "model_zoo" / "__init__.py").write_text("")
    (pkg / "gluon" / "model_zoo" / "vision.py").write_text("")
    py = tmp_path / "mxpython"
    py.write_text(f"#!/bin/sh\nPYTHONPATH={tmp_path / 'fakemx'} exec {sys.executable} \"$@\"\n")
    py.chmod(py.stat().st_mode | stat.S_IEXEC)
    return tmp_path, py


def test_speedometer_lines_of_both_libraries_are_parsed():
    log = ("DEBUG:jax:Speed: 3 compile\nINFO:root:Epoch[0] Batch [20-40]\tSpeed: 85.70 samples/sec\taccuracy=0.9\n"
           "2026-12-02 Node[0] Epoch[1] Batch [5]\tSpeed: 1.5e+02 samples/sec\n"
           "INFO:root:Iter[0] Batch [5]\tSpeed: 12.50 samples/sec\n")
    assert ic.parse_speedometer(log) == [85.70, 150.0, 12.5]


def test_fake_scripts_run_for_both_libraries_with_medians_and_ratios(fakes, tmp_path):
    root, py = fakes
    out = tmp_path / "r.json"
    rep = ic.run(["--examples", str(root / "mxnet-1.9.1"), "--python-mxnet", str(py), "--networks", "resnet-18",
                  "--sizes", "32", "--batches", "1,2", "--reps", "2", "--disp-batches", "2", "--intervals", "3",
                  "--core", "-1", "--no-fetch", "--json", str(out)])
    assert rep["ok"] and not rep["notes"] and not rep["meta"]["fallback"]
    assert rep == json.loads(out.read_text())
    (c,) = rep["configs"]
    assert c["network"] == "resnet-18" and c["image_shape"] == "3,32,32" and not c["errors"]
    assert set(c["batches"]["1"]) == {"score"} and set(c["batches"]["2"]) == {"score", "train"}
    s = c["batches"]["2"]["score"]
    assert s["jbind"] == [100.0, 100.0] and s["mxnet"] == [50.0, 50.0] and s["ratio"] == 2.0
    t = c["batches"]["2"]["train"]
    # 2 x (1 warm-up + 3) + 1 batches: Speedometer lines at batches 2, 4, 6, 8; the first is dropped
    assert t["jbind"] == [404.0, 406.0, 408.0] and t["mxnet"] == [204.0, 206.0, 208.0]
    assert t["jbind_median"] == 406.0 and t["ratio"] == pytest.approx(406 / 206)
    assert "ratio jbind / MXNet" in ic.table(rep)


def test_without_scripts_or_mxnet_the_fallback_runs_and_says_so(tmp_path):
    rep = ic.run(["--examples", str(tmp_path / "absent"), "--python-mxnet", str(tmp_path / "nopython"),
                  "--networks", "tiny,inception-bn", "--sizes", "8", "--batches", "2", "--reps", "1",
                  "--disp-batches", "1", "--intervals", "1", "--core", "-1"])
    assert rep["ok"] and rep["meta"]["fallback"]
    notes = " ".join(rep["notes"])
    assert "no train_imagenet.py" in notes and "FALLBACK" in notes and "MXNet skipped" in notes
    assert "inception-bn: no equivalent" in notes
    (c,) = rep["configs"]
    assert c["network"] == "tiny" and not c["errors"]
    row = c["batches"]["2"]
    assert row["train"]["jbind_median"] > 0 and row["train"]["mxnet"] is None and len(row["train"]["jbind"]) == 1
    assert row["score"]["ratio"] is None and len(row["score"]["jbind"]) == 1 and row["score"]["jbind"][0] > 0


def test_unknown_network_is_refused():
    with pytest.raises(SystemExit, match="unknown"):
        ic.run(["--networks", "vgg-99", "--no-fetch"])


def test_jbind_bench_section_names_every_figure_with_mxnet_as_baseline(fakes, monkeypatch):
    import dataclasses

    from jbind.bench import Config, _imgclf
    root, py = fakes
    monkeypatch.setenv("JBIND_BENCH_MXNET_PYTHON", str(py))
    cfg = dataclasses.replace(Config.quick_config(), imgclf_examples=str(root / "mxnet-1.9.1"))
    figs = _imgclf.run(cfg)
    assert [f.name for f in figs] == _imgclf.figure_names(cfg) == [
        "imgclf.resnet-18.32.b1.score", "imgclf.resnet-18.32.b2.score", "imgclf.resnet-18.32.b2.train"]
    assert [f.ratio for f in figs[:2]] == [2.0, 2.0] and figs[2].unit == "samples/s"
    assert figs[2].samples == [402.0]      # --quick: lines after batches 1 and 2, the first dropped
