"""The bucketing example's --plot (issue #23): train and validation perplexity per epoch
on integer epoch ticks, with tokens/s on a second axis; the numbers drawn ride in the
PNG's text chunk so this test can read them back."""
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(os.path.dirname(HERE), "examples", "bucketing_rnn.py")


def _corpus(path, n, rng):
    words = ["the", "cat", "sat", "on", "a", "mat", "dog", "ran", "far", "away"]
    with open(path, "w") as f:
        for _ in range(n):
            f.write(" ".join(rng.choice(words, size=rng.integers(3, 9))) + "\n")


def test_plot_holds_train_and_validation_perplexity_and_speed_per_epoch(tmp_path):
    from PIL import Image

    rng = np.random.default_rng(0)
    _corpus(tmp_path / "train.txt", 80, rng)
    _corpus(tmp_path / "valid.txt", 40, rng)
    png = tmp_path / "ppl.png"
    cmd = [sys.executable, EXAMPLE, "--data", str(tmp_path / "train.txt"), "--valid-data", str(tmp_path / "valid.txt"),
           "--num-epochs", "2", "--num-layers", "1", "--num-hidden", "8", "--num-embed", "8", "--batch-size", "4",
           "--buckets", "5,10", "--max-batches", "4", "--seed", "1", "--plot", str(png)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    img = Image.open(png)
    assert img.format == "PNG" and img.size[0] > 300
    data = json.loads(img.text["Description"])
    assert data["epoch"] == [1, 2]
    for key in ("train_perplexity", "validation_perplexity", "tokens_per_second"):
        assert len(data[key]) == 2 and all(np.isfinite(v) and v > 0 for v in data[key]), (key, data)
    # The train curve is the metric the log reports at each epoch's end, not the validation one.
    logged = [float(line.rsplit("=", 1)[1]) for line in out.stdout.splitlines() if "Train-perplexity=" in line]
    np.testing.assert_allclose(data["train_perplexity"], logged, rtol=1e-5)
    assert data["train_perplexity"] != data["validation_perplexity"]
    assert not list(tmp_path.glob("*.tmp.png"))
