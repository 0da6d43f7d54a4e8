"""kvstore='dist_sync' over two processes on loopback (jax.distributed, gloo)."""
import os
import re
import socket
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "dist_worker.py")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_workers(n, args, timeout=180):
    port = _free_port()
    procs = []
    try:
        for rank in range(n):
            env = dict(os.environ, JBIND_COORDINATOR=f"127.0.0.1:{port}", JBIND_NUM_PROCESSES=str(n),
                       JBIND_PROCESS_ID=str(rank), JAX_PLATFORMS="cpu")
            procs.append(subprocess.Popen([sys.executable, WORKER, *args(rank)], env=env,
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
        outs = [p.communicate(timeout=timeout)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    for p, out in zip(procs, outs):
        assert p.returncode == 0, out[-3000:]
    return outs


def _alone(args, timeout=180):
    env = {k: v for k, v in os.environ.items() if not k.startswith("JBIND_")}
    proc = subprocess.run([sys.executable, WORKER, *args], env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]


@pytest.mark.parametrize("model", ["mlp", "mlp_separate", "lm"])
def test_two_workers_equal_each_other_and_one_process(tmp_path, model):
    _run_workers(2, lambda r: [model, "dist_sync", str(tmp_path / f"w{r}.npz")])
    _alone([model, "local", str(tmp_path / "alone.npz")])
    w0, w1, alone = (np.load(tmp_path / f) for f in ("w0.npz", "w1.npz", "alone.npz"))
    assert sorted(w0.files) == sorted(alone.files)
    for k in w0.files:
        np.testing.assert_array_equal(w0[k], w1[k], err_msg=k)
        np.testing.assert_allclose(w0[k], alone[k], rtol=1e-5, atol=1e-6, err_msg=k)


def test_launcher_runs_the_example_like_one_process_over_the_global_batches(tmp_path):
    """Issue #8's check, shrunk: `python -m jbind.launch -n 2 examples/bucketing_rnn.py
    --kvstore dist_sync` prints the perplexities of one process with the global batch."""
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(30)]
    for name, n in (("train.txt", 300), ("valid.txt", 60)):
        lines = [" ".join(rng.choice(words, size=rng.integers(3, 18))) for _ in range(n)]
        (tmp_path / name).write_text("\n".join(lines) + "\n")
    example = os.path.join(os.path.dirname(HERE), "examples", "bucketing_rnn.py")
    common = ["--data", str(tmp_path / "train.txt"), "--valid-data", str(tmp_path / "valid.txt"),
              "--num-layers", "1", "--num-hidden", "8", "--num-embed", "8", "--buckets", "10,20",
              "--max-batches", "4", "--num-epochs", "1", "--seed", "2", "--lr", "0.1"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("JBIND_")}
    two = subprocess.run([sys.executable, "-m", "jbind.launch", "-n", "2", example, "--kvstore", "dist_sync",
                          "--batch-size", "4", *common], env=env, capture_output=True, text=True, timeout=240)
    assert two.returncode == 0, (two.stdout + two.stderr)[-3000:]
    one = subprocess.run([sys.executable, example, "--batch-size", "8", *common], env=env, capture_output=True,
                         text=True, timeout=240)
    assert one.returncode == 0, (one.stdout + one.stderr)[-3000:]

    def perplexities(text, prefix=""):
        return {m.group(1): float(m.group(2)) for m in re.finditer(
            re.escape(prefix) + r".*Epoch\[0\] (Train|Validation)-perplexity=([\d.]+)", text)}
    alone = perplexities(one.stdout)
    assert set(alone) == {"Train", "Validation"}
    for rank in ("[0] ", "[1] "):
        got = perplexities(two.stdout, rank)
        assert set(got) == set(alone), two.stdout[-2000:]
        for k in alone:  # the metric's sums cross the workers in float32
            assert got[k] == pytest.approx(alone[k], rel=1e-5), k
