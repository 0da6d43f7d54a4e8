"""Wall time of imperative (mx.nd) op calls: 1000 calls each of a few ops on small arrays,
after one warm-up call. Run single-threaded: `python benchmarks/eager_bench.py`."""
import time

import numpy as np

import jbind as mx


def main(n=1000):
    x = mx.nd.array(np.random.rand(8, 4, 5, 5).astype("float32"))
    g, b = mx.nd.ones((4,)), mx.nd.zeros((4,))
    mm, mv = mx.nd.zeros((4,)), mx.nd.ones((4,))
    fx = mx.nd.array(np.random.rand(8, 16).astype("float32"))
    w, bias = mx.nd.ones((10, 16)), mx.nd.zeros((10,))
    lg, lb = mx.nd.ones((16,)), mx.nd.zeros((16,))
    cases = {
        "BatchNorm": lambda: mx.nd.BatchNorm(x, g, b, mm, mv, fix_gamma=False),
        "FullyConnected": lambda: mx.nd.FullyConnected(fx, w, bias, num_hidden=10),
        "softmax": lambda: mx.nd.softmax(fx),
        "LayerNorm": lambda: mx.nd.LayerNorm(fx, lg, lb),
    }
    for name, f in cases.items():
        t0 = time.perf_counter()
        f().wait_to_read()
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        for _ in range(n):
            y = f()
        y.wait_to_read()
        per = (time.perf_counter() - t0) / n
        print(f"{name:15s} first call {first * 1e3:8.1f} ms   then {per * 1e6:8.1f} us/call")


if __name__ == "__main__":
    main()
