"""benchmarks/zoo_bench.py and `jbind-bench zoo`: the report's structure, the output checks,
and MXNet absent -> a skip note (the timed figures are the lead's, on a quiet machine)."""
import numpy as np
import pytest

import jbind as mx
import zoo_bench
import zoo_export
from jbind.bench import BenchError, Config, expected_figures
from jbind.bench import _zoo
from jbind.bench._cli import run as cli_run


def test_rel_err_is_relative_to_the_reference_and_refuses_shape_mismatch():
    ref = np.array([[2.0, -4.0]])
    assert zoo_bench.rel_err(ref + np.array([[0.0, 4e-4]]), ref) == pytest.approx(1e-4)
    assert zoo_bench.rel_err(np.zeros((2, 2)), ref) == float("inf")
    assert not zoo_bench._check(ref * 1.001, ref)["ok"] and zoo_bench._check(ref, ref)["ok"]


def test_quick_run_without_mxnet_checks_jbind_against_the_export(tmp_path):
    zoo_export.export(mx, np, str(tmp_path), "tiny")      # jbind's own Gluon exports the checkpoint
    assert zoo_export.exported(str(tmp_path), "tiny")
    report = zoo_bench.run(["--quick", "--cache", str(tmp_path), "--batches", "1", "--reps", "1",
                            "--train-reps", "1", "--python-mxnet", str(tmp_path / "no-python"), "--core", "-1",
                            "--json", str(tmp_path / "zoo.json")])
    assert report["ok"] and any("MXNet skipped" in n for n in report["notes"])
    tiny = report["models"]["tiny"]
    assert tiny["input"] == [3, 32, 32] and "error" not in tiny
    infer, train = tiny["batches"]["1"]["infer"], tiny["batches"]["1"]["train"]
    for entry in (infer, train):
        assert entry["mxnet"] is None and entry["ratio"] is None
        j = entry["jbind"]
        assert j["first_s"] > 0 and len(j["samples_s"]) == 1 and j["median_s"] == j["samples_s"][0]
    check = infer["checks"]["jbind_vs_export"]
    assert check["ok"] and check["rel_err"] <= zoo_bench.TOLERANCE
    assert (tmp_path / "zoo.json").is_file()


def _entry(j, m, checks):
    t = lambda first, xs: {"first_s": first, "median_s": float(np.median(xs)), "samples_s": xs}  # noqa: E731
    return {"jbind": t(*j), "mxnet": t(*m) if m else None, "checks": checks}


def test_cli_figures_pair_jbind_with_mxnet_and_flag_differences(monkeypatch):
    bad = {"jbind_vs_mxnet": {"rel_err": 3e-3, "ok": False}}
    row = {"infer": _entry((2.0, [0.004, 0.006]), (0.1, [0.002]), bad),
           "train": _entry((5.0, [0.01]), None, {})}
    report = {"notes": ["MXNet skipped: test"], "models": {"tiny": {"batches": {"1": row, "2": row}}}}
    monkeypatch.setattr(zoo_bench, "run", lambda argv: report)
    figs = {f.name: f for f in _zoo.run(Config.quick_config())}
    assert sorted(figs) == sorted(expected_figures(Config.quick_config(), ("zoo",)))
    f = figs["zoo.tiny.b1.infer"]
    assert f.samples == pytest.approx([4.0, 6.0]) and f.ratio == pytest.approx(2.5) and "OUTPUTS DIFFER" in f.note
    assert figs["zoo.tiny.b2.infer_first"].ratio == pytest.approx(20.0)
    assert figs["zoo.tiny.b1.train"].baseline is None and "MXNet skipped" in figs["zoo.tiny.b1.train"].note


def test_cli_zoo_options_are_checked(monkeypatch):
    seen = {}
    monkeypatch.setattr(zoo_bench, "run", lambda argv: seen.setdefault("argv", argv) and {"notes": [], "models": {}})
    cli_run(["zoo", "--quick", "--models", "tiny", "--batches", "3", "--cache", "/tmp/x"])
    assert seen["argv"][:6] == ["--models", "tiny", "--batches", "3", "--reps", "2"]
    assert "/tmp/x" in seen["argv"]
    with pytest.raises(BenchError, match="--batches"):
        cli_run(["zoo", "--quick", "--batches", "0"])
    with pytest.raises(BenchError, match="unknown"):
        cli_run(["zoo", "--quick", "--models", "resnet9000"])


def test_jbind_failure_is_an_error(monkeypatch):
    monkeypatch.setattr(zoo_bench, "run", lambda argv: {"notes": [], "models": {"tiny": {"error": "jbind failed: x"}}})
    with pytest.raises(BenchError, match="jbind failed"):
        _zoo.run(Config.quick_config())
