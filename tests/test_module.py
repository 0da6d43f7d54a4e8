import logging

import numpy as np
import pytest

import jbind as mx


def mlp(classes=3):
    data = mx.sym.Variable("data")
    h = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=16, name="fc1"), act_type="relu", name="r1")
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=classes, name="fc2"), name="softmax")


def toy_data(n=96, dim=5, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    proj = rng.normal(size=(dim, classes))
    x = rng.normal(size=(n, dim)).astype(np.float32)
    return x, (x @ proj).argmax(axis=1).astype(np.float32)


def test_fit_learns_and_score_predict():
    x, y = toy_data()
    train = mx.io.NDArrayIter(x, y, batch_size=16, shuffle=False)
    mod = mx.mod.Module(mlp(), context=mx.cpu())
    mod.fit(train, num_epoch=15, optimizer="sgd", optimizer_params={"learning_rate": 0.5},
            initializer=mx.init.Xavier(), eval_metric="acc")
    (name, acc), = mod.score(train, "acc")
    assert name == "accuracy" and acc > 0.9
    pred = mod.predict(train)
    assert pred.shape == (96, 3)
    np.testing.assert_allclose(pred.asnumpy().sum(axis=1), 1.0, rtol=1e-5)
    assert mod.output_shapes == [("softmax_output", (16, 3))]


def test_update_matches_plain_sgd():
    x, y = toy_data(n=16)
    mod = mx.mod.Module(mlp(), context=mx.cpu())
    mod.bind(data_shapes=[("data", (16, 5))], label_shapes=[("softmax_label", (16,))])
    mod.init_params(mx.init.Uniform(0.1))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    before = {k: v.asnumpy() for k, v in mod.get_params()[0].items()}
    batch = mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)])
    mod.forward_backward(batch)
    grads = {n: g[0].asnumpy() for n, g in zip(mod._exec_group.param_names, mod._exec_group.grad_arrays)}
    mod.update()
    after = mod.get_params()[0]
    for k in before:  # rescale_grad defaults to 1/batch_size, as in MXNet
        np.testing.assert_allclose(after[k].asnumpy(), before[k] - 0.1 * grads[k] / 16, rtol=1e-5, atol=1e-7)


def test_two_devices_train_like_one():
    x, y = toy_data(n=32)
    results = []
    # cpu(2), cpu(3) share the test run's devices (2 CPU devices): repeated devices in
    # one data-parallel group train as on distinct ones
    for ctx in ([mx.cpu(0)], [mx.cpu(0), mx.cpu(1)], [mx.cpu(i) for i in range(4)], [mx.cpu(0), mx.cpu(0)]):
        mx.random.seed(0)
        mod = mx.mod.Module(mlp(), context=ctx)
        mod.bind(data_shapes=[("data", (32, 5))], label_shapes=[("softmax_label", (32,))])
        mod.init_params(mx.init.Constant(0.05))
        mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.3, "momentum": 0.9})
        for _ in range(3):
            mod.forward_backward(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)]))
            mod.update()
        results.append({k: v.asnumpy() for k, v in mod.get_params()[0].items()})
    for other in results[1:]:
        for k in results[0]:
            np.testing.assert_allclose(other[k], results[0][k], rtol=1e-5, atol=1e-6)


def test_fit_over_more_cpu_contexts_than_devices_matches_one_context():
    x, y = toy_data(n=32)
    weights = []
    for ctx in ([mx.cpu(0)], [mx.cpu(i) for i in range(4)]):
        mx.random.seed(0)
        mod = mx.mod.Module(mlp(), context=ctx)
        mod.fit(mx.io.NDArrayIter(x, y, batch_size=16), num_epoch=2, optimizer="sgd",
                optimizer_params={"learning_rate": 0.3}, initializer=mx.init.Xavier(), kvstore="local")
        weights.append(mod.get_params()[0]["fc2_weight"].asnumpy())
        assert mod.predict(mx.io.NDArrayIter(x, batch_size=16)).shape == (32, 3)
    np.testing.assert_allclose(weights[1], weights[0], rtol=1e-5, atol=1e-6)


def test_checkpoint_round_trip_with_optimizer_states(tmp_path):
    x, y = toy_data(n=32)
    train = mx.io.NDArrayIter(x, y, batch_size=16)
    mod = mx.mod.Module(mlp(), context=mx.cpu())
    mod.fit(train, num_epoch=2, optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    prefix = str(tmp_path / "mlp")
    mod.save_checkpoint(prefix, 2, save_optimizer_states=True)
    loaded = mx.mod.Module.load(prefix, 2, load_optimizer_states=True, context=mx.cpu())
    loaded.bind(data_shapes=train.provide_data, label_shapes=train.provide_label)
    loaded.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    for k, v in mod.get_params()[0].items():
        np.testing.assert_array_equal(loaded.get_params()[0][k].asnumpy(), v.asnumpy())
    # continuing training from the checkpoint gives the same step as the original module
    batch = mx.io.DataBatch([mx.nd.array(x[:16])], [mx.nd.array(y[:16])])
    for m in (mod, loaded):
        m.forward_backward(batch)
        m.update()
    for k, v in mod.get_params()[0].items():
        np.testing.assert_allclose(loaded.get_params()[0][k].asnumpy(), v.asnumpy(), rtol=1e-6)
    states = tmp_path / "mlp-0002.states"
    states.write_bytes(states.read_bytes()[:40])  # truncated
    with pytest.raises(mx.base.MXNetError, match=r"mlp-0002\.states.*cannot read optimizer states"):
        loaded.load_optimizer_states(str(states))
    kv = mx.kv.create("local")
    kv.set_optimizer(mx.optimizer.create("sgd", momentum=0.9))
    with pytest.raises(mx.base.MXNetError, match=r"mlp-0002\.states.*cannot read optimizer states"):
        kv.load_optimizer_states(str(states))
    with pytest.raises(mx.base.MXNetError, match="cannot read optimizer states .*nope"):
        kv.load_optimizer_states(str(tmp_path / "nope"))


def test_module_errors():
    with pytest.raises(ValueError, match="input with name 'dat' is not found"):
        mx.mod.Module(mlp(), data_names=("dat",))
    mod = mx.mod.Module(mlp())
    with pytest.raises(mx.base.MXNetError, match="bound"):
        mod.get_params()
    with pytest.raises(mx.base.MXNetError, match="don't match names"):
        mod.bind(data_shapes=[("x", (4, 5))], label_shapes=[("softmax_label", (4,))])


def _lm_sym_gen(vocab=12, hidden=8):
    def sym_gen(seq_len):
        data = mx.sym.Variable("data")
        label = mx.sym.Variable("softmax_label")
        embed = mx.sym.Embedding(data, input_dim=vocab, output_dim=6, name="embed")
        steps = mx.sym.SliceChannel(embed, num_outputs=seq_len, axis=1, squeeze_axis=True, name="slice")
        h = None
        outs = []
        w_i, b_i, w_h = mx.sym.Variable("i2h_weight"), mx.sym.Variable("i2h_bias"), mx.sym.Variable("h2h_weight")
        for t in range(seq_len):
            x = mx.sym.FullyConnected(steps[t], num_hidden=hidden, weight=w_i, bias=b_i, name=f"t{t}_i2h")
            if h is not None:
                x = x + mx.sym.FullyConnected(h, num_hidden=hidden, weight=w_h, no_bias=True, name=f"t{t}_h2h")
            h = mx.sym.Activation(x, act_type="tanh", name=f"t{t}_h")
            outs.append(mx.sym.expand_dims(h, axis=1))
        out = mx.sym.Concat(*outs, dim=1) if seq_len > 1 else outs[0]
        pred = mx.sym.FullyConnected(mx.sym.Reshape(out, shape=(-1, hidden)), num_hidden=vocab, name="pred")
        sm = mx.sym.SoftmaxOutput(pred, mx.sym.Reshape(label, shape=(-1,)), name="softmax", use_ignore=True,
                                  ignore_label=0)
        return sm, ("data",), ("softmax_label",)
    return sym_gen


def test_bucketing_module_first_bind_reuses_the_default_graph():
    calls = []
    gen = _lm_sym_gen()

    def counted(key):
        calls.append(key)
        return gen(key)

    mod = mx.mod.BucketingModule(counted, default_bucket_key=8)
    mod.bind([("data", (4, 8))], [("softmax_label", (4, 8))])
    assert calls == [8]  # MXNet calls sym_gen(8) twice, once in __init__ and once in bind
    mod.bind([("data", (4, 8))], [("softmax_label", (4, 8))], force_rebind=True)
    assert calls == [8, 8]
    mod.init_params()
    mod.switch_bucket(5, [("data", (4, 5))], [("softmax_label", (4, 5))])
    assert calls == [8, 8, 5]


def test_bucketing_module_shares_one_store_and_compiles_per_bucket():
    rng = np.random.default_rng(0)
    sentences = [list(rng.integers(1, 12, size=rng.integers(2, 9))) for _ in range(200)]
    it = mx.rnn.BucketSentenceIter(sentences, 8, buckets=[3, 5, 8], invalid_label=0)
    mod = mx.mod.BucketingModule(_lm_sym_gen(), default_bucket_key=it.default_bucket_key, context=mx.cpu())
    mod.bind(it.provide_data, it.provide_label)
    mod.init_params(mx.init.Xavier())
    ppl0 = mod.score(it, mx.metric.Perplexity(0))[0][1]
    it.reset()  # as in MXNet, score() leaves the iterator at its end
    with mx.compile.count_compiles() as n:
        mod.fit(it, num_epoch=3, eval_metric=mx.metric.Perplexity(0), optimizer="sgd",
                optimizer_params={"learning_rate": 0.5})
    buckets = mod.buckets
    assert set(buckets) == {3, 5, 8}
    stores = {id(m._exec_group.store) for m in buckets.values()}
    assert len(stores) == 1, "every bucket holds the default bucket's parameter store"
    w = buckets[8]._exec_group.param_arrays[0][0]
    assert all(m._exec_group.param_arrays[0][0] is w for m in buckets.values())
    assert n() <= 3, "one training executable per bucket (scoring ones were compiled before)"
    ppl = mod.score(it, mx.metric.Perplexity(0))[0][1]
    assert np.isfinite(ppl) and ppl < ppl0


def test_fused_step_equals_separate_calls():
    """fit's one-call training step gives the numbers of forward_backward + update."""
    x, y = toy_data(n=16)
    results = []
    for fused in (False, True):
        mod = mx.mod.Module(mlp(), context=mx.cpu())
        mod.bind(data_shapes=[("data", (16, 5))], label_shapes=[("softmax_label", (16,))])
        mod.init_params(mx.init.Constant(0.1))
        mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.2, "momentum": 0.9, "wd": 1e-3})
        batch = mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)])
        for _ in range(3):
            if fused:
                assert mod._can_fuse()
                mod.train_step(batch)
            else:
                mod.forward_backward(batch)
                mod.update()
        results.append((mod.get_params()[0], mod.get_outputs()[0].asnumpy(), mod._updater.get_states()))
    for k in results[0][0]:
        np.testing.assert_allclose(results[1][0][k].asnumpy(), results[0][0][k].asnumpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-5, atol=1e-7)


def test_fused_step_does_not_invalidate_arrays_the_user_holds():
    x, y = toy_data(n=16)
    mod = mx.mod.Module(mlp(), context=mx.cpu())
    mod.bind(data_shapes=[("data", (16, 5))], label_shapes=[("softmax_label", (16,))])
    mine = {"fc1_weight": mx.nd.ones((16, 5)) * 0.1}
    mod.init_params(mx.init.Constant(0.1), arg_params=mine, allow_missing=True)
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.2})
    held = mod.get_params()[0]["fc2_weight"]
    exe_copy = mod._exec_group.execs[0].arg_dict["fc2_weight"].copy()
    for _ in range(2):
        mod.train_step(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)]))
    np.testing.assert_allclose(mine["fc1_weight"].asnumpy(), 0.1)
    assert held.asnumpy().shape == (3, 16)
    np.testing.assert_allclose(exe_copy.asnumpy(), 0.1)  # taken before the steps, still readable


def test_precompile_compiles_every_bucket_once_ahead_of_time():
    rng = np.random.default_rng(1)
    sentences = [list(rng.integers(1, 12, size=rng.integers(2, 9))) for _ in range(120)]
    it = mx.rnn.BucketSentenceIter(sentences, 8, buckets=[3, 5, 8], invalid_label=0)
    mod = mx.mod.BucketingModule(_lm_sym_gen(hidden=7), default_bucket_key=it.default_bucket_key)
    mod.bind(it.provide_data, it.provide_label)
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1})
    with mx.compile.count_compiles() as n:
        seconds = mod.precompile(it.buckets, wait=True).wait()
    assert sorted(seconds) == [3, 5, 8] and n() == 3
    with mx.compile.count_compiles() as n:
        for batch in it:
            mod.train_step(batch)
    assert n() == 0, "no batch waits for the compiler after precompile"
    assert mod.buckets[3]._exec_group.store is mod.buckets[8]._exec_group.store


def test_fit_precompiles_what_the_epoch_visits_in_the_order_it_visits():
    rng = np.random.default_rng(2)
    sentences = [list(rng.integers(1, 12, size=rng.integers(2, 12))) for _ in range(300)]
    it = mx.rnn.BucketSentenceIter(sentences, 8, buckets=[3, 5, 8, 11], invalid_label=0, seed=4)

    class Few(mx.io.DataIter):  # the first 4 batches of each epoch, like the example's --max-batches
        def __init__(self, n=4):
            super().__init__(it.batch_size)
            self.n, self.i = n, 0
            self.provide_data, self.provide_label = it.provide_data, it.provide_label
            self.default_bucket_key, self.buckets = it.default_bucket_key, it.buckets

        def reset(self):
            self.i = 0
            it.reset()

        def next(self):
            if self.i >= self.n:
                raise StopIteration
            self.i += 1
            return it.next()

        def upcoming_buckets(self):
            return it.upcoming_buckets(self.n - self.i)
    first4 = [it.buckets[b] for b, _ in it.idx[:4]]
    visits = list(dict.fromkeys(first4))
    mod = mx.mod.BucketingModule(_lm_sym_gen(hidden=5), default_bucket_key=it.default_bucket_key)
    mod.fit(Few(), num_epoch=1, optimizer="sgd", eval_metric=mx.metric.Perplexity(0))
    compiled = list(mod._precompile_job.wait())
    # Launched at the second step: the first two batches' buckets are compiled by their steps.
    assert compiled == [k for k in visits if k not in first4[:2]]
    assert set(it.buckets) - set(visits), "this seed leaves a bucket unvisited (the case under test)"
    for key in set(it.buckets) - set(visits) - {it.default_bucket_key}:
        assert key not in mod.buckets, f"bucket {key} is not visited this epoch: not compiled"
    alone = mx.mod.BucketingModule(_lm_sym_gen(hidden=5), default_bucket_key=it.default_bucket_key)
    alone.fit(Few(1), num_epoch=1, optimizer="sgd", eval_metric=mx.metric.Perplexity(0))
    assert alone._precompile_job is None, "the first batch runs alone: nothing compiles beside it"


def test_training_input_errors_are_clear(tmp_path):
    with pytest.raises(ValueError, match="no bucket holds any sentence"):
        mx.rnn.BucketSentenceIter([], 4, buckets=[5])
    with pytest.raises(ValueError, match="Cannot find optimizer nosuch"):
        mx.optimizer.create("nosuch")
    with pytest.raises(mx.base.MXNetError, match="cannot read symbol file .*nope-symbol.json"):
        mx.mod.Module.load(str(tmp_path / "nope"), 1)
    # a checkpoint whose parameters do not fit the symbol it is bound to
    mod = mx.mod.Module(mlp(classes=3))
    mod.bind(data_shapes=[("data", (4, 5))], label_shapes=[("softmax_label", (4,))])
    mod.init_params(mx.init.Xavier())
    prefix = str(tmp_path / "m")
    mod.save_checkpoint(prefix, 1)
    other = mx.mod.Module.load(prefix, 1)
    with pytest.raises(mx.base.MXNetError, match=r"parameter 'fc1_weight'.*shape \(16, 5\).*shape \(16, 7\)"):
        other.bind(data_shapes=[("data", (4, 7))], label_shapes=[("softmax_label", (4,))])


def test_kvstore_object_follows_mxnet_choice_and_holds_the_updater():
    """One device: no kvstore object; several: the named store, holding the module's optimizer states."""
    x, y = toy_data(n=8)
    batch = mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)])
    for ctx, kv_type in (([mx.cpu(0)], None), ([mx.cpu(0), mx.cpu(1)], "local"), ([mx.cpu(0), mx.cpu(1)], "device")):
        mod = mx.mod.Module(mlp(), context=ctx)
        mod.bind(data_shapes=[("data", (8, 5))], label_shapes=[("softmax_label", (8,))])
        mod.init_params(mx.init.Uniform(0.1))
        mod.init_optimizer(kvstore=kv_type or "local", optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
        mod.forward_backward(batch)
        mod.update()
        if kv_type is None:
            assert mod._kvstore is None
            continue
        assert mod._kvstore.type == kv_type and mod._kvstore._updater is mod._updater
        states = mod._kvstore._updater.states
        assert sorted(states) == list(range(4))  # fc1/fc2 weight and bias, by parameter index
        assert all(np.abs(s.asnumpy()).sum() > 0 for s in states.values())  # one momentum step taken


def test_parameters_declared_sparse_are_handed_out_sparse():
    """A `var(stype='row_sparse')` parameter comes back from get_params as row_sparse, as MXNet's."""
    x = mx.sym.Variable("data")
    v = mx.sym.Variable("v", shape=(5, 2), stype="row_sparse", init=mx.init.Uniform(0.1))
    b = mx.sym.Variable("o_bias", shape=(1))  # an int shape, as MXNet takes it: (1,)
    out = mx.sym.LinearRegressionOutput(mx.sym.broadcast_add(mx.sym.dot(x, v), b), name="out")
    mod = mx.mod.Module(out, data_names=["data"], label_names=["out_label"])
    mod.bind([("data", (3, 5))], [("out_label", (3, 2))])
    mod.init_params()
    args = mod.get_params()[0]
    assert args["v"].stype == "row_sparse" and args["o_bias"].stype == "default" and args["o_bias"].shape == (1,)
    before = args["v"].asnumpy().copy()
    assert np.abs(before).sum() > 0
    mod.init_optimizer(optimizer_params={"learning_rate": 0.1})
    mod.forward_backward(mx.io.DataBatch([mx.nd.ones((3, 5))], [mx.nd.zeros((3, 2))]))
    mod.update()
    after = mod.get_params()[0]["v"]
    assert after.stype == "row_sparse" and not np.allclose(after.asnumpy(), before)  # trained, still sparse
