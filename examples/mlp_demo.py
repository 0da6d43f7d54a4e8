"""A small MLP trained with the MXNet 1.x executor API: the program is MXNet's, the import is jbind.

    python examples/mlp_demo.py

Builds data with a known rule (class = argmax of a fixed projection), binds an MLP with
simple_bind, trains it with plain SGD written against `arg_dict` / `grad_dict`, and
prints the training accuracy, which should end above 0.9.
"""
import argparse

import numpy as np

import jbind as mx


def build(num_classes):
    data = mx.sym.Variable("data")
    fc1 = mx.sym.FullyConnected(data=data, num_hidden=64, name="fc1")
    act = mx.sym.Activation(fc1, act_type="relu", name="relu1")
    fc2 = mx.sym.FullyConnected(data=act, num_hidden=num_classes, name="fc2")
    return mx.sym.SoftmaxOutput(fc2, name="softmax")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--lr", type=float, default=0.5)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    num_classes, dim, n = 4, 20, 1024
    proj = rng.normal(size=(dim, num_classes))
    x = rng.normal(size=(n, dim)).astype(np.float32)
    y = (x @ proj).argmax(axis=1).astype(np.float32)

    net = build(num_classes)
    exe = net.simple_bind(mx.cpu(), data=(args.batch_size, dim))
    for name in ("fc1_weight", "fc2_weight"):
        shape = exe.arg_dict[name].shape
        exe.arg_dict[name][:] = rng.uniform(-1, 1, size=shape) * np.sqrt(6.0 / sum(shape))
    params = [n for n in net.list_arguments() if n not in ("data", "softmax_label")]
    for epoch in range(args.epochs):
        correct = 0
        for i in range(0, n, args.batch_size):
            exe.arg_dict["data"][:] = x[i:i + args.batch_size]
            exe.arg_dict["softmax_label"][:] = y[i:i + args.batch_size]
            exe.forward(is_train=True)
            exe.backward()
            for p in params:
                exe.arg_dict[p][:] = exe.arg_dict[p] - exe.grad_dict[p] * (args.lr / args.batch_size)
            correct += int((exe.outputs[0].asnumpy().argmax(axis=1) == y[i:i + args.batch_size]).sum())
        print(f"epoch {epoch + 1:2d}  train accuracy {correct / n:.3f}")
    print(f"compile cache: {mx.compile.stats()}")


if __name__ == "__main__":
    main()
