"""kvstore='dist_sync' over two processes on loopback (jax.distributed, gloo)."""
import os
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


@pytest.mark.parametrize("model", ["mlp", "mlp_separate"])
def test_two_workers_equal_each_other_and_one_process(tmp_path, model):
    _run_workers(2, lambda r: [model, "dist_sync", str(tmp_path / f"w{r}.npz")])
    _alone([model, "local", str(tmp_path / "alone.npz")])
    w0, w1, alone = (np.load(tmp_path / f) for f in ("w0.npz", "w1.npz", "alone.npz"))
    assert sorted(w0.files) == sorted(alone.files)
    for k in w0.files:
        np.testing.assert_array_equal(w0[k], w1[k], err_msg=k)
        np.testing.assert_allclose(w0[k], alone[k], rtol=1e-5, atol=1e-6, err_msg=k)
