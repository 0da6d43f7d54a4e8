"""What MXNet 1.9.1's `mx.mon.Monitor` reports for one training step of a small network.

Run from the repository root with the MXNet venv:

    MXNET_SUBGRAPH_BACKEND=NONE /tmp/mxvenv_gluon/bin/python tests/golden/make_monitor_golden.py

Writes tests/golden/monitor/step.json: [name, mean absolute value] in the order the
monitor saw them (forward outputs, backward outputs, then arguments), for the network
and parameters of `build` with data (1, 2) and label (1, 2); checked by tests/test_monitor.py.
Deterministic: fixed parameters and inputs.
"""
import json
import os

import numpy as np

os.environ.setdefault("MXNET_SUBGRAPH_BACKEND", "NONE")
import mxnet as mx  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "monitor")
PARAMS = {"fc_0_weight": [[.15, .20], [.25, .30]], "fc_0_bias": [.35, .35],
          "fc_1_weight": [[.40, .45], [.50, .55]], "fc_1_bias": [.60, .60]}
DATA, LABEL = [[0.05, 0.10]], [[0.01, 0.99]]


def build(sym):
    x = sym.Variable("data")
    x = sym.FullyConnected(name="fc_0", data=x, num_hidden=2)
    x = sym.Activation(name="act_0", data=x, act_type="sigmoid")
    x = sym.FullyConnected(name="fc_1", data=x, num_hidden=2)
    x = sym.Activation(name="act_1", data=x, act_type="sigmoid")
    return sym.LinearRegressionOutput(data=x, name="out", grad_scale=2)


def main():
    os.makedirs(OUT, exist_ok=True)
    mon = mx.mon.Monitor(1, stat_func=lambda a: mx.nd.mean(mx.nd.abs(a)), pattern=".*")
    mod = mx.mod.Module(build(mx.sym), label_names=["out_label"], context=mx.cpu())
    mod.bind([("data", (1, 2))], label_shapes=[("out_label", (1, 2))])
    mod.install_monitor(mon)
    mod.init_params(arg_params={k: mx.nd.array(v) for k, v in PARAMS.items()})
    mon.tic()
    mod.forward_backward(mx.io.DataBatch([mx.nd.array(DATA)], [mx.nd.array(LABEL)]))
    res = [[name, float(np.float32(text.strip()))] for _, name, text in mon.toc()]
    with open(os.path.join(OUT, "step.json"), "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
