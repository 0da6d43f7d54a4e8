"""FeedForward cases, run by make_feedforward_golden.py in MXNet 1.9.1 and by
tests/test_feedforward.py in jbind. Imports only numpy: the library comes as `mx`.

- `numpy`: an MLP with BatchNorm (layer names whose sorted order is not the argument
  order, so the order of the initializer's draws shows) trained 2 epochs from numpy
  arrays: FeedForward shuffles them with numpy's global RNG and rolls the last
  incomplete batch over; the validation pair is shuffled too. Seeded with
  `mx.random.seed` and `np.random.seed`; `np_after` is numpy's next draws after
  training, so the number of shuffles is checked too.
- `two_cpus`: `numpy` with the batches split over cpu(0) and cpu(1) (BatchNorm's
  statistics per device; the aux states FeedForward hands back are the devices' mean).
- `iter`: the same net from a DataIter the script builds (no shuffle, 'pad'), with
  `epoch_size` shorter than a pass and an optimizer object (whose rescale_grad
  FeedForward leaves at 1), the default Uniform(0.01) initializer.
- `buckets`: a function as the symbol (MXNet's sym_gen), batches of two bucket keys.

Each returns the parameters after training, the training metric at every batch, the
validation metric after each epoch, predict() outputs (also with return_data) and
score() values.
"""
import numpy as np


def net(mx):
    data = mx.sym.Variable("data")
    h = mx.sym.FullyConnected(data, num_hidden=8, no_bias=True, name="z_fc")  # BatchNorm follows
    h = mx.sym.BatchNorm(h, fix_gamma=False, name="m_bn")
    h = mx.sym.Activation(h, act_type="relu")
    h = mx.sym.FullyConnected(h, num_hidden=3, name="a_fc")
    return mx.sym.SoftmaxOutput(h, name="softmax")


def inputs():
    rng = np.random.RandomState(0)
    x = rng.uniform(-1, 1, size=(22, 6)).astype(np.float32)
    y = rng.randint(0, 3, size=22).astype(np.float32)
    xv = rng.uniform(-1, 1, size=(10, 6)).astype(np.float32)
    yv = rng.randint(0, 3, size=10).astype(np.float32)
    return x, y, xv, yv


NUMPY_KW = dict(num_epoch=2, numpy_batch_size=8, optimizer="sgd", learning_rate=0.1, momentum=0.9, wd=0.001)
SEEDS = {"numpy": (11, 7), "iter": (5, None)}  # (mx.random.seed, np.random.seed)


class Recorder:
    """Callbacks that keep the metric values FeedForward reports."""

    def __init__(self):
        self.batches, self.evals = [], []

    def batch(self, param):
        self.batches.append([param.epoch, param.nbatch, param.eval_metric.get()[1]])

    def eval_end(self, param):
        self.evals.append([param.epoch, param.nbatch, param.eval_metric.get()[1]])


def trained(model, rec):
    out = {"arg:" + k: v.asnumpy() for k, v in model.arg_params.items()}
    out.update({"aux:" + k: v.asnumpy() for k, v in model.aux_params.items()})
    out["batch_metrics"] = np.array(rec.batches, dtype=np.float64)
    out["eval_metrics"] = np.array(rec.evals, dtype=np.float64).reshape(-1, 3)
    return out


def seed(mx, case):
    mx_seed, np_seed = SEEDS[case]
    mx.random.seed(mx_seed)
    if np_seed is not None:
        np.random.seed(np_seed)


def case_numpy(mx, ctx=None):
    x, y, xv, yv = inputs()
    seed(mx, "numpy")
    rec = Recorder()
    model = mx.model.FeedForward(net(mx), ctx=ctx, initializer=mx.init.Xavier(), **NUMPY_KW)
    model.fit(x, y, eval_data=(xv, yv), batch_end_callback=rec.batch, eval_end_callback=rec.eval_end)
    out = trained(model, rec)
    out["np_after"] = np.random.rand(4)
    out["predict"] = model.predict(x)
    pv, dv, lv = model.predict(xv, return_data=True)
    out.update(predict_v=pv, predict_v_data=dv, predict_v_label=lv)
    out["score_iter"] = np.float64(model.score(mx.io.NDArrayIter(x, y, batch_size=8)))
    out["score_numpy"] = np.float64(model.score(x))  # numpy X is scored against zero labels
    return out


def case_iter(mx):
    x, y, xv, yv = inputs()
    seed(mx, "iter")
    rec = Recorder()
    train = mx.io.NDArrayIter(x, y, batch_size=8)
    val = mx.io.NDArrayIter(xv, yv, batch_size=8)
    model = mx.model.FeedForward(net(mx), num_epoch=2, epoch_size=2,
                                 optimizer=mx.optimizer.Adam(learning_rate=0.01))
    model.fit(train, eval_data=val, batch_end_callback=rec.batch, eval_end_callback=rec.eval_end)
    out = trained(model, rec)
    out["predict"] = model.predict(val)
    out["predict_2"] = model.predict(val, num_batch=1)
    out["score_iter"] = np.float64(model.score(val, eval_metric="ce"))
    return out


def case_two_cpus(mx):
    return case_numpy(mx, ctx=[mx.cpu(0), mx.cpu(1)])


def bucket_sym_gen(mx):
    def sym_gen(key):
        h = mx.sym.sum(mx.sym.Variable("data"), axis=1)
        return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=3, name="fc"), name="softmax")
    return sym_gen


def bucket_iter(mx, keys=(2, 3, 2, 3, 3)):
    """Batches of 4 sequences of 4 features, of length 2 or 3 (the bucket key); the default
    bucket is 2, the smallest (MXNet 1.9.1's FeedForward fails on a smaller one)."""
    class BucketIter(mx.io.DataIter):
        def __init__(self):
            super().__init__(batch_size=4)
            rng = np.random.RandomState(3)
            self.batches = [(k, rng.uniform(-1, 1, (4, k, 4)).astype(np.float32),
                             rng.randint(0, 3, 4).astype(np.float32)) for k in keys]
            self.default_bucket_key = 2
            self.provide_data = [mx.io.DataDesc("data", (4, 2, 4))]
            self.provide_label = [mx.io.DataDesc("softmax_label", (4,))]
            self.i = 0

        def reset(self):
            self.i = 0

        def next(self):
            if self.i == len(self.batches):
                raise StopIteration
            key, x, y = self.batches[self.i]
            self.i += 1
            return mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)], pad=0, bucket_key=key,
                                   provide_data=[mx.io.DataDesc("data", x.shape)],
                                   provide_label=[mx.io.DataDesc("softmax_label", y.shape)])
    return BucketIter()


def case_buckets(mx):
    mx.random.seed(2)
    rec = Recorder()
    model = mx.model.FeedForward(bucket_sym_gen(mx), num_epoch=2, initializer=mx.init.Xavier(),
                                 learning_rate=0.1, momentum=0.5)
    model.fit(bucket_iter(mx), batch_end_callback=rec.batch)
    out = trained(model, rec)
    out["predict"] = model.predict(bucket_iter(mx, keys=(2, 2)))  # predict binds the default bucket
    return out


CASES = {"numpy": case_numpy, "iter": case_iter, "two_cpus": case_two_cpus, "buckets": case_buckets}
