"""jbind-bench train's peers without MXNet or PyTorch: fake peer scripts print the peers' JSON;
a fake PyTorch interpreter runs, an absent MXNet one is skipped with a note, a failing peer
leaves its figures without a baseline, and jbind runs the MXNet script through the alias."""
import dataclasses
import json
import stat
import sys

import pytest

from jbind.bench import BenchError, Config
from jbind.bench import _train_peers as tp
from jbind.bench._cli import _title
from jbind.bench._cli import run as cli_run

FAKE = '''import argparse, importlib.util, json, os, sys
p = argparse.ArgumentParser()
p.add_argument("--json-out")
p.add_argument("--max-batches", type=int)
p.add_argument("--compile", default="")
p.add_argument("--cell", default="")
a, rest = p.parse_known_args()
if os.path.basename(__file__) == "torch_bucketing_lm.py":
    import torch
    lib = "torch"
else:
    import mxnet
    lib = mxnet.__name__          # 'jbind' through the alias, 'mxnet' under MXNet
if a.compile == "dynamic":
    sys.exit("torch.compile: no C compiler")
speed = {"jbind": 1000.0, "torch": 800.0}[lib]
json.dump({"steady_tokens_per_s_padded": speed, "first_batch_from_process_start_s": speed / 1000,
           "total_wall_from_process_start_s": speed / 100, "train_perplexity_cumulative": 50.0,
           "batches_run": a.max_batches, "omp": os.environ.get("OMP_NUM_THREADS"),
           "inductor": os.environ.get("TORCHINDUCTOR_CACHE_DIR"), "argv": sys.argv[1:]},
          open(a.json_out, "w"))
'''


@pytest.fixture
def peers(tmp_path):
    folder = tmp_path / "peers"
    folder.mkdir()
    for script in tp.SCRIPTS:
        (folder / script).write_text(FAKE)
    (tmp_path / "faketorch" / "torch").mkdir(parents=True)
    (tmp_path / "faketorch" / "torch" / "__init__.py").write_text("")
    py = tmp_path / "torchpython"
    py.write_text(f"#!/bin/sh\nPYTHONPATH={tmp_path / 'faketorch'} exec {sys.executable} \"$@\"\n")
    py.chmod(py.stat().st_mode | stat.S_IEXEC)
    cfg = dataclasses.replace(Config.quick_config(), train_peers=str(folder),
                              python_mxnet=str(tmp_path / "no-mxnet-python"), python_torch=str(py))
    return cfg


def test_peers_run_pinned_with_one_thread_and_report_jbind_over_each(peers, capsys):
    figs, why = tp.run(peers)
    assert why == "" and [f.name for f in figs] == tp.figure_names(peers)
    assert "then its peers (ratio jbind / peer), 12 batches each" in _title("train", peers)
    by = {f.name: f for f in figs}
    eager = by["train.peers.torch_eager.tokens_per_s"]
    assert eager.samples == [1000.0] and eager.baseline == [800.0] and eager.ratio == pytest.approx(1.25)
    assert "perplexity jbind 50.00, torch_eager 50.00" in eager.note
    assert by["train.peers.torch_eager.wall"].ratio == pytest.approx(10.0 / 8.0)
    assert by["train.peers.torch_eager.first_batch"].baseline == [0.8]
    for name in ("mxnet_unrolled", "mxnet_fused"):                       # no MXNet interpreter: skipped
        f = by[f"train.peers.{name}.tokens_per_s"]
        assert f.baseline is None and f.samples == [1000.0]
        assert f"{name} skipped: no interpreter at" in f.note and "--python-mxnet" in f.note
    failed = by["train.peers.torch_compile.tokens_per_s"]                # the peer exited 1
    assert failed.baseline is None and "torch_compile failed: torch.compile: no C compiler" in failed.note
    runs = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("train peers: running")]
    assert [r.split(":")[1].split()[-1] for r in runs] == ["jbind", "torch_eager", "torch_compile"]
    assert all(f"taskset -c {tp.core()}" in r for r in runs) and "--max-batches 12" in runs[0]
    assert "fortunes/train.txt" in runs[0] and "--buckets 5,10 " in runs[0] and "--compile none" in runs[1]


def test_the_fakes_saw_one_thread_and_the_configs_sizes(peers, tmp_path):
    res = tp.run_one(peers, "torch", peers.python_torch, tp.Path(peers.train_peers) / "torch_bucketing_lm.py",
                     ("--compile", "none"), str(tmp_path), "one")
    assert res["omp"] == "1" and res["batches_run"] == peers.peer_batches
    assert res["inductor"] == str(tmp_path / "inductor_one")          # a cold torch.compile cache
    argv = res["argv"]
    assert argv[argv.index("--num-hidden") + 1] == "8" and argv[argv.index("--batch-size") + 1] == "4"
    assert argv[argv.index("--warmup-batches") + 1] == "4"


def test_without_a_peers_folder_the_section_says_so(tmp_path):
    cfg = dataclasses.replace(Config.quick_config(), train_peers="none")
    assert tp.figure_names(cfg) == [] and tp.run(cfg) == ([], "peers not run (--peers none)")
    assert "peers" not in _title("train", cfg)
    bad = dataclasses.replace(cfg, train_peers=str(tmp_path))
    with pytest.raises(BenchError, match="no bench_train_fused.py, mxnet_bench_train.py, torch_bucketing_lm.py"):
        tp.figure_names(bad)
    with pytest.raises(BenchError, match=f"--peers {tmp_path}: no "):
        cli_run(["train", "--quick", "--peers", str(tmp_path)])


def test_the_pythons_come_from_the_option_then_the_environment(monkeypatch):
    monkeypatch.setenv("JBIND_BENCH_TORCH_PYTHON", "/env/python")
    cfg = Config.quick_config()
    assert tp.python_of(cfg, "torch") == "/env/python"
    assert tp.python_of(dataclasses.replace(cfg, python_torch="/opt/py"), "torch") == "/opt/py"
    monkeypatch.delenv("JBIND_BENCH_MXNET_PYTHON", raising=False)
    assert tp.python_of(cfg, "mxnet").endswith("/bin/python")       # gluon_lm_bench's default


def test_a_peer_json_without_the_figures_is_an_error(tmp_path):
    script = tmp_path / "p.py"
    script.write_text("import json, sys\n"
                      "json.dump({'batches_run': 3}, open(sys.argv[sys.argv.index('--json-out') + 1], 'w'))\n")
    res = tp.run_one(Config.quick_config(), "torch", sys.executable, script, (), str(tmp_path), "p")
    assert res == {"error": "p.py wrote no steady_tokens_per_s_padded, first_batch_from_process_start_s, "
                            "total_wall_from_process_start_s to its JSON"}
    assert json.loads((tmp_path / "p.json").read_text()) == {"batches_run": 3}
