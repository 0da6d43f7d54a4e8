"""benchmarks/imgclf_accuracy.py without MXNet or its scripts: the parsing of every accuracy the
scripts log (in MXNet's formats), the comparison against MXNet's own spread, the table, and the
child runner's seeding and unshuffled ImageRecordIter (run on jbind through the alias package)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import imgclf_accuracy as acc  # noqa: E402
from _common import peer_environment, write_alias  # noqa: E402

LOG = """INFO:root:start with arguments Namespace(network='resnet')
2026-12-02 14:00:01,123 Node[0] Epoch[0] Batch [0-2]\tSpeed: 31.20 samples/sec\taccuracy=0.520833\ttop_k_accuracy_3=0.750000\tcross-entropy=2.100000
INFO:root:Epoch[0] Batch [2-4]\tSpeed: 30.10 samples/sec\taccuracy=1.000000\ttop_k_accuracy_3=1.000000\tcross-entropy=0.500000
INFO:root:Epoch[0] Batch [4]\tSpeed: 30.10 samples/sec
INFO:root:Epoch[0] Train-accuracy=0.820312
INFO:root:Epoch[0] Train-top_k_accuracy_3=0.900000
INFO:root:Epoch[0] Train-cross-entropy=1.200000
INFO:root:Epoch[0] Time cost=8.123
INFO:root:Saved checkpoint to "/tmp/x/resnet18-0001.params"
INFO:root:Epoch[0] Validation-accuracy=0.187500
INFO:root:Epoch[1] Validation-top_k_accuracy_3=nan
INFO:root:Finished with 123.000000 images per second
INFO:root:('accuracy', 0.09375)
INFO:root:('top_k_accuracy_5', 0.515625)
"""


def test_parse_accuracies_reads_every_accuracy_line_in_mxnets_formats():
    got = acc.parse_accuracies(LOG)
    assert list(got) == ["E0 B[0-2] accuracy", "E0 B[0-2] top_k_accuracy_3", "E0 B[2-4] accuracy",
                         "E0 B[2-4] top_k_accuracy_3", "E0 Train accuracy", "E0 Train top_k_accuracy_3",
                         "E0 Validation accuracy", "E1 Validation top_k_accuracy_3", "score accuracy",
                         "score top_k_accuracy_5"]
    assert got["E0 B[0-2] accuracy"] == 0.520833 and got["E0 Train accuracy"] == 0.820312
    assert got["score top_k_accuracy_5"] == 0.515625 and np.isnan(got["E1 Validation top_k_accuracy_3"])


def test_parse_accuracies_ignores_speed_only_lines_and_losses():
    assert acc.parse_accuracies("INFO:root:Epoch[0] Batch [0-5]\tSpeed: 10.00 samples/sec\n"
                                "INFO:root:Epoch[0] Train-cross-entropy=1.0\nINFO:root:('ce', 2.0)\n") == {}


def test_compare_same_ok_and_fail_against_mxnets_spread():
    mx = {"E0 Train accuracy": 0.5, "E0 Validation accuracy": 0.25}
    other_seed = {"E0 Train accuracy": 0.6, "E0 Validation accuracy": 0.25}
    native = {"E0 Train accuracy": 0.5, "E0 Validation accuracy": 0.2}
    same = acc.compare(mx, dict(mx), {"mxnet2": other_seed})
    assert same["verdict"] == "same" and same["max_diff"] == 0
    ok = acc.compare(mx, {"E0 Train accuracy": 0.45, "E0 Validation accuracy": 0.25},
                     {"mxnet2": other_seed, "mxnet1-native": native})
    assert ok["verdict"] == "ok" and ok["tolerance"] == pytest.approx(0.1)
    assert ok["spreads"] == {"mxnet2": pytest.approx(0.1), "mxnet1-native": pytest.approx(0.05)}
    bad = acc.compare(mx, {"E0 Train accuracy": 0.5, "E0 Validation accuracy": 0.1}, {"mxnet1-native": native})
    assert bad["verdict"] == "FAIL" and bad["max_diff"] == pytest.approx(0.15)
    assert bad["tolerance"] == pytest.approx(0.05)


def test_compare_fails_when_lines_differ_or_nothing_was_logged():
    mx = {"E0 Train accuracy": 0.5, "E0 Validation accuracy": 0.25}
    short = acc.compare(mx, {"E0 Train accuracy": 0.5}, {"s": mx})
    assert short["verdict"].startswith("FAIL (lines differ: E0 Validation accuracy")
    assert acc.compare({}, {}, {"s": {}})["verdict"] == "FAIL (no accuracy logged)"
    assert acc.compare(mx, {"E0 Train accuracy": 0.4, "E0 Validation accuracy": 0.25}, {})["verdict"].startswith("?")


def test_table_shows_each_line_side_by_side_and_the_verdict():
    mx = {"E0 Train accuracy": 0.5}
    r = {"case": "mnist-mlp", "script": "train_mnist.py", "mxnet": mx, "jbind": {"E0 Train accuracy": 0.45},
         "yardsticks": {"mxnet2": {"E0 Train accuracy": 0.6}}}
    r["compare"] = acc.compare(mx, r["jbind"], r["yardsticks"])
    lines = acc.table([r]).splitlines()
    assert lines[1] == "mnist-mlp (train_mnist.py)"
    assert lines[2].split() == ["E0", "Train", "accuracy", "0.5000", "0.4500", "0.0500", "0.6000"]
    assert lines[3].endswith("largest |diff| 0.0500, tolerance (MXNet's spread) 0.1000: ok")


def test_runs_put_mxnet_first_and_skip_the_seed_yardstick_where_no_seed_is_in_play():
    seeded, scored = acc.CASES[0], acc.CASES[-1]
    assert [r[0] for r in acc.runs_of(seeded, 3)] == ["mxnet3", "jbind3", "mxnet4", "mxnet3-native"]
    assert [r[0] for r in acc.runs_of(scored, 3)] == ["mxnet3", "jbind3", "mxnet3-native"]
    assert acc.runs_of(seeded, 3)[-1][3] == {"MXNET_MKLDNN_ENABLED": "0"}
    assert scored[1] == "score.py" and not scored[3]


FAKE_SCRIPT = """import json, random, sys
import numpy as np
import mxnet as mx
it = mx.io.ImageRecordIter(path_imgrec=sys.argv[1], data_shape=(3, 8, 8), batch_size=6, shuffle=True)
print(json.dumps({"argv": sys.argv[1:], "np": np.random.rand(), "py": random.random(),
                  "mx": mx.nd.random.uniform(shape=(3,)).asnumpy().tolist(),
                  "labels": next(iter(it)).label[0].asnumpy().tolist(), "name": __name__}))
"""


def test_child_seeds_every_generator_and_reads_records_unshuffled(tmp_path):
    from make_image_data import make_rec
    labels = make_rec(str(tmp_path / "r"), 6, 6, 0, (10, 12), ".png", indexed=False)
    script = tmp_path / "fake.py"
    script.write_text(FAKE_SCRIPT)
    env = peer_environment("jbind", ROOT, front=(write_alias(str(tmp_path / "alias")),))

    def child(seed):
        out = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "imgclf_accuracy.py"), "child",
                              str(seed), str(script), str(tmp_path / "r.rec")], env=env, capture_output=True,
                             text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-2000:]
        return json.loads(out.stdout.strip().splitlines()[-1])

    a, b, c = child(5), child(5), child(6)
    assert a["argv"] == [str(tmp_path / "r.rec")] and a["name"] == "__main__"
    assert a["np"] == np.random.RandomState(5).rand() and a["py"] == __import__("random").Random(5).random()
    assert a["mx"] == b["mx"] and a["mx"] != c["mx"]
    assert a["labels"] == [float(x) for x in labels]   # file order despite shuffle=True


def test_missing_scripts_or_mxnet_are_named(tmp_path):
    with pytest.raises(SystemExit, match="--examples"):
        acc.main(["--examples", str(tmp_path)])
    (tmp_path / "train_imagenet.py").write_text("")
    with pytest.raises(SystemExit, match="--python-mxnet"):
        acc.main(["--examples", str(tmp_path), "--python-mxnet", str(tmp_path / "nope")])
