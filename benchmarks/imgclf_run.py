"""One library's run for benchmarks/image_classification.py (not meant to be called by hand).

    imgclf_run.py score --scripts DIR --network resnet-50 --side 224 --batches 1,16,32 --reps 3 --out F
        imports MXNet's benchmark_score.py (its argv set to one valid network) and calls its own
        `score()` `--reps` times per batch; `--side` other than 224 binds the script's symbol at
        that side (its CLI has only 224 and no resnet-18, its `score()` accepts both).
    imgclf_run.py fallback-score / fallback-train --network resnet-18 --side 64 ...
        jbind's own equivalent where MXNet's scripts are absent: the Gluon model zoo's network
        (resnet18_v1, resnet50_v1, mobilenet1.0; `tiny`, a smoke network) as a symbol with a
        SoftmaxOutput head through Module: forward for scoring as benchmark_score.py does (5
        warm-up calls, 10 timed), `Module.fit` on random data with a Speedometer for training.

`import mxnet` is whichever library the parent put first on PYTHONPATH (the real MXNet, or an
alias package for jbind). Results go to `--out` as JSON; training logs go to stderr, where the
parent reads the Speedometer lines as it does for train_imagenet.py.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from _common import write_json

FALLBACK_ZOO = {"resnet-18": "resnet18_v1", "resnet-50": "resnet50_v1", "mobilenet": "mobilenet1.0"}


def _score_script(args) -> dict:
    sys.path.insert(0, args.scripts)
    os.chdir(args.scripts)
    sys.argv = ["benchmark_score.py", "--network", "resnet-50", "--batch-size", "1"]
    import benchmark_score as bs
    if args.side != 224:
        build = bs.get_symbol

        def get_symbol(network, batch_size, dtype):   # the script's symbol, bound at another side
            sym, shapes = build(network, batch_size, dtype)
            return sym, [(shapes[0][0], (batch_size, 3, args.side, args.side))]
        bs.get_symbol = get_symbol
    out = {}
    for n in args.batches:
        out[str(n)] = [bs.score(network=args.network, dev=bs.mx.cpu(), batch_size=n, num_batches=args.num_batches,
                                dtype="float32") for _ in range(args.reps)]
    return {"images_per_s": out, "version": getattr(bs.mx, "__version__", "?")}


def _fallback_symbol(mx, network: str, classes: int):
    data = mx.sym.var("data")
    if network == "tiny":
        x = mx.sym.Convolution(data, num_filter=8, kernel=(3, 3), pad=(1, 1), name="conv0")
        x = mx.sym.Activation(mx.sym.BatchNorm(x, name="bn0"), act_type="relu")
        x = mx.sym.Pooling(x, kernel=(1, 1), global_pool=True, pool_type="avg")
        out = mx.sym.FullyConnected(mx.sym.flatten(x), num_hidden=classes, name="fc")
    else:
        from mxnet.gluon.model_zoo import vision
        net = vision.get_model(FALLBACK_ZOO[network], classes=classes)
        net.hybridize()
        out = net(data)
    return mx.sym.SoftmaxOutput(out, name="softmax")


def _fallback_score(args) -> dict:
    import mxnet as mx
    out = {}
    for n in args.batches:
        mod = mx.mod.Module(_fallback_symbol(mx, args.network, args.classes), context=mx.cpu())
        mod.bind(for_training=False, data_shapes=[("data", (n, 3, args.side, args.side))])
        mod.init_params(initializer=mx.init.Xavier(magnitude=2.))
        batch = mx.io.DataBatch([mx.nd.random.uniform(-1, 1, shape=(n, 3, args.side, args.side))], [])
        speeds = []
        for _ in range(args.reps):
            for i in range(5 + args.num_batches):
                if i == 5:
                    tic = time.time()
                mod.forward(batch, is_train=False)
                for o in mod.get_outputs():
                    o.wait_to_read()
            speeds.append(args.num_batches * n / (time.time() - tic))
        out[str(n)] = speeds
    return {"images_per_s": out, "version": getattr(mx, "__version__", "?")}


def _fallback_train(args) -> dict:
    import numpy as np
    import mxnet as mx
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    n, batches = args.batches[0], args.disp_batches * args.intervals + 1
    rng = np.random.default_rng(0)
    data = rng.uniform(-1, 1, (n, 3, args.side, args.side)).astype(np.float32)
    label = rng.integers(0, args.classes, (n,)).astype(np.float32)
    it = mx.io.NDArrayIter(np.tile(data, (batches, 1, 1, 1)), np.tile(label, batches), batch_size=n)
    mod = mx.mod.Module(_fallback_symbol(mx, args.network, args.classes), context=mx.cpu())
    mod.fit(it, num_epoch=1, optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
            initializer=mx.init.Xavier(magnitude=2.), eval_metric="acc",
            batch_end_callback=mx.callback.Speedometer(n, args.disp_batches))
    return {"version": getattr(mx, "__version__", "?")}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("mode", choices=("score", "fallback-score", "fallback-train"))
    p.add_argument("--scripts", help="MXNet's example/image-classification folder (mode score)")
    p.add_argument("--network", required=True)
    p.add_argument("--side", type=int, default=224)
    p.add_argument("--batches", type=lambda s: [int(b) for b in s.split(",") if b], required=True)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--num-batches", type=int, default=10, help="timed forward calls per score (the script's 10)")
    p.add_argument("--disp-batches", type=int, default=5)
    p.add_argument("--intervals", type=int, default=6)
    p.add_argument("--classes", type=int, default=1000)
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    run = {"score": _score_script, "fallback-score": _fallback_score, "fallback-train": _fallback_train}[args.mode]
    res = run(args)
    write_json(args.out, res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
