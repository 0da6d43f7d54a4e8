"""Each deliberate difference from MXNet 1.x, one test each (listed in the README)."""
import numpy as np
import pytest

import jbind as mx


def test_symbols_are_hashable_and_take_inplace_operators():
    """Symbols hash by identity and `s += 1` is `s = s + 1`; MXNet's are unhashable and refuse `+=`."""
    s = mx.sym.Variable("s")
    t = s
    t += 1
    assert {s: 0}[s] == 0
    assert t is not s and t.list_arguments() == ["s"] and t.get_children().list_outputs() == ["s"]


def test_composition_returns_a_new_symbol():
    """Symbol.__call__ composition returns a new symbol and leaves the original unchanged."""
    x = mx.sym.Variable("x")
    net = mx.sym.Activation(x, act_type="relu", name="r")
    net(x=mx.sym.Variable("y"))
    assert net.list_arguments() == ["x"]


def test_training_forward_computes_gradients_with_the_outputs():
    """With loss heads only, forward(is_train=True) computes gradients in the same XLA call;
    they become visible in grad_dict only when backward() runs, as in MXNet."""
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc"),
                               name="sm")
    exe = net.simple_bind(mx.cpu(), data=(2, 4))
    exe.arg_dict["data"][:] = 1
    exe.forward(is_train=True)
    np.testing.assert_array_equal(exe.grad_dict["fc_bias"].asnumpy(), 0)
    exe.backward()
    assert np.abs(exe.grad_dict["fc_bias"].asnumpy()).sum() > 0


def test_monitor_skips_hidden_outputs_and_reports_true_uncomputed_gradients():
    """The monitor reports no hidden outputs (BatchNorm's mean/var) and the true value of a gradient MXNet leaves uncomputed."""
    x = mx.sym.Variable("x")
    y = mx.sym.BatchNorm(x * 2, name="bn", fix_gamma=False)
    exe = y.simple_bind(mx.cpu(), x=(4, 3), grad_req={"x": "null", "bn_gamma": "write", "bn_beta": "null"})
    seen = {}
    exe.set_monitor_callback(lambda name, arr: seen.setdefault(name, arr.asnumpy()))
    exe.forward(is_train=True, x=np.arange(12, dtype=np.float32).reshape(4, 3))
    assert "bn_output" in seen and "bn_mean" not in seen and "bn_var" not in seen  # MXNet also reports these
    head = np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32)
    exe.backward(mx.nd.array(head))
    # the gradient reaching bn's data input, which MXNet does not compute here (only gamma's):
    # the one an executor that differentiates x sees (x's gradient is twice it)
    full = y.simple_bind(mx.cpu(), x=(4, 3))
    full.forward(is_train=True, x=np.arange(12, dtype=np.float32).reshape(4, 3))
    full.backward(mx.nd.array(head))
    np.testing.assert_allclose(2 * seen["bn_backward_output0"], full.grad_dict["x"].asnumpy(), rtol=1e-4, atol=1e-5)
    assert "_mul" not in "".join(k for k in seen if "backward" in k)  # x*2 needs no gradient: no backward node

def test_fix_gamma_leaves_the_gamma_argument_alone():
    """BatchNorm(fix_gamma=True) computes with gamma = 1 but does not write 1 into the gamma array."""
    exe = mx.sym.BatchNorm(mx.sym.Variable("x"), name="bn").simple_bind(mx.cpu(), x=(4, 3))
    exe.arg_dict["bn_gamma"][:] = 2.0
    exe.arg_dict["x"][:] = np.arange(12).reshape(4, 3)
    out = exe.forward(is_train=True)[0].asnumpy()
    np.testing.assert_allclose(out.std(axis=0), 1.0, rtol=1e-2)
    np.testing.assert_array_equal(exe.arg_dict["bn_gamma"].asnumpy(), 2.0)


def test_zero_dim_arrays_save_as_shape_1(tmp_path):
    """mx.nd.save stores a 0-d NDArray with shape (1,): in MXNet's V2 format ndim 0 means 'empty'."""
    f = str(tmp_path / "a.params")
    mx.nd.save(f, [mx.nd.NDArray(mx.nd.array([3.0])._data.reshape(()))])
    assert mx.nd.load(f)[0].shape == (1,)


def test_rnn_misuse_raises_an_error_that_is_also_an_assertion():
    """Where mx.rnn asserts, jbind raises mx.rnn.RNNError: both an MXNetError and an AssertionError."""
    assert issubclass(mx.rnn.RNNError, mx.base.MXNetError) and issubclass(mx.rnn.RNNError, AssertionError)


def test_dcasgd_with_momentum_runs():
    """DCASGD with momentum applies the documented rule (MXNet 1.9.1 crashes on it)."""
    opt = mx.optimizer.create("dcasgd", learning_rate=0.1, momentum=0.9)
    w, g = mx.nd.ones((3,)), mx.nd.ones((3,))
    opt.update(0, w, g, opt.create_state(0, w))
    assert np.all(w.asnumpy() < 1)


def test_bucket_key_beyond_every_declared_bucket_is_an_error():
    """MXNet binds any new bucket key; once buckets are declared (by the iterator's
    `buckets` in fit, or precompile), jbind refuses a key larger than all of them."""
    import pytest

    def sym_gen(seq_len):
        data = mx.sym.Variable("data")
        pred = mx.sym.FullyConnected(mx.sym.Reshape(data, shape=(-1, 1)), num_hidden=2, name="fc")
        return mx.sym.SoftmaxOutput(pred, mx.sym.Reshape(mx.sym.Variable("softmax_label"), shape=(-1,)),
                                    name="softmax"), ("data",), ("softmax_label",)
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=4)
    mod.bind([("data", (2, 4))], [("softmax_label", (2, 4))])
    mod.init_params()
    mod.precompile([2, 4], wait=True)

    def batch(t):
        return mx.io.DataBatch([mx.nd.zeros((2, t))], [mx.nd.zeros((2, t))], bucket_key=t,
                               provide_data=[("data", (2, t))], provide_label=[("softmax_label", (2, t))])
    mod.forward(batch(3), is_train=False)  # undeclared but within the buckets: bound, as MXNet
    assert mod.get_outputs()[0].shape == (6, 2)
    with pytest.raises(mx.base.MXNetError, match=r"bucket key 5 is larger than every declared bucket \[2, 4\]"):
        mod.forward(batch(5), is_train=False)


def test_unknown_kvstore_type_is_an_error():
    """`mx.kv.create` with an unknown name raises MXNetError (MXNet quietly made a local store)."""
    import pytest
    with pytest.raises(mx.base.MXNetError, match="unknown kvstore type 'locl'"):
        mx.kv.create("locl")


def test_kvstore_push_of_a_wrong_shape_fails_at_the_push():
    """A bad push raises at the call and changes nothing (MXNet's fails later, asynchronously)."""
    import pytest
    kv = mx.kv.create("local")
    kv.init(0, mx.nd.ones((2,)))
    with pytest.raises(mx.base.MXNetError, match=r"holds shape \(2,\); a pushed value has shape \(3,\)"):
        kv.push(0, mx.nd.ones((3,)))


def test_dist_kvstore_outside_a_job_is_one_worker(tmp_path):
    """'dist_sync' in a lone process is a one-worker store that can save optimizer states
    (MXNet needs its DMLC_* variables, and saves no states from a dist store)."""
    kv = mx.kv.create("dist_sync")
    assert (kv.rank, kv.num_workers) == (0, 1)
    kv.init(0, mx.nd.ones((2,)))
    kv.set_optimizer(mx.optimizer.Adam())
    kv.push(0, mx.nd.ones((2,)))
    kv.save_optimizer_states(str(tmp_path / "opt.states"))
    assert (tmp_path / "opt.states").stat().st_size > 0


def test_pooling_same_runs_without_mxnets_pad_workaround():
    """Pooling(pooling_convention='same') runs with pad unset; MXNet 1.9.1 runs it only with
    pad=(0, 0, 0) and MKLDNN off (otherwise its shape rule fails)."""
    p = mx.sym.Pooling(mx.sym.Variable("x"), kernel=(3,), stride=(2,), pooling_convention="same", name="p")
    x = np.arange(7, dtype=np.float32).reshape(1, 1, 7)
    out = p.simple_bind(mx.cpu(), x=x.shape, grad_req="null").forward(x=x)[0].asnumpy()
    np.testing.assert_array_equal(out.ravel(), [2, 4, 6, 6])


def test_dist_fit_logs_metrics_over_all_workers(monkeypatch):
    """With a dist_sync kvstore, fit's epoch metric lines cover every worker's batches
    (here two identical fake workers: the sums and counts double, the value stays)."""
    from jbind import distributed
    from jbind.metric._base import over_all_workers
    monkeypatch.setattr(distributed, "is_distributed", lambda: True)
    monkeypatch.setattr(distributed, "allreduce_sum", lambda arrays, device=None: [np.asarray(a) * 2 for a in arrays])
    m = mx.metric.Perplexity(ignore_label=None)
    m.update([mx.nd.array([0, 1])], [mx.nd.array([[0.5, 0.5], [0.25, 0.75]])])
    both = over_all_workers(m)
    assert both.num_inst == 2 * m.num_inst and m.num_inst == 2
    assert abs(both.get()[1] - m.get()[1]) < 1e-5
    mod = mx.mod.Module(mx.sym.Variable("data"), label_names=None)
    mod._dist = True
    assert mod._over_workers(m).num_inst == 4


def test_micro_pearson_global_value_is_the_correlation():
    """MXNet 1.9.1's PearsonCorrelation(average='micro').get_global() returns 0.0 (its
    global sums are never filled); jbind's is the same streamed correlation as get()."""
    m = mx.metric.PearsonCorrelation(average="micro")
    x = np.linspace(-1, 1, 8, dtype=np.float32)
    m.update([mx.nd.array(x)], [mx.nd.array(2 * x + 0.1 * np.cos(7 * x))])
    m.update([mx.nd.array(x[::-1])], [mx.nd.array(2 * x[::-1])])
    local, glob = m.get()[1], m.get_global()[1]
    assert glob == local and 0.99 < local <= 1.0


def test_group2ctx_placing_groups_elsewhere_warns_and_runs_on_the_bound_context():
    """group2ctx (model parallelism by ctx_group) is not followed: the graph runs on the bound
    context as one program, with MXNet's results; a mapping naming another device warns."""
    import warnings

    import pytest
    with mx.AttrScope(ctx_group="dev1"):
        fc1 = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc1")
    with mx.AttrScope(ctx_group="dev2"):
        net = mx.sym.FullyConnected(fc1, num_hidden=2, name="fc2")
    with pytest.warns(mx.base.JbindWarning, match=r"ctx_groups on cpu\(1\): not followed"):
        exe = net.simple_bind(mx.cpu(0), group2ctx={"dev1": mx.cpu(0), "dev2": mx.cpu(1)}, data=(4, 5))
    for name, arr in exe.arg_dict.items():
        arr[:] = np.linspace(-1, 1, arr.size).reshape(arr.shape)
    d, w1, b1, w2, b2 = (exe.arg_dict[k].asnumpy() for k in ("data", "fc1_weight", "fc1_bias", "fc2_weight",
                                                               "fc2_bias"))
    np.testing.assert_allclose(exe.forward()[0].asnumpy(), (d @ w1.T + b1) @ w2.T + b2, rtol=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every group on the bound device: nothing to say
        net.simple_bind(mx.cpu(0), group2ctx={"dev1": mx.cpu(0), "dev2": mx.cpu(0)}, data=(4, 5))
        mx.mod.Module(net, label_names=None, context=mx.cpu(0), group2ctxs=[{"dev1": mx.cpu(0)}])
    with pytest.warns(mx.base.JbindWarning, match=r"cpu\(1\)"):
        mx.mod.Module(net, label_names=None, context=mx.cpu(0), group2ctxs={"dev2": [mx.cpu(1)]})
    with pytest.warns(mx.base.JbindWarning, match=r"cpu\(1\)"):
        mx.mod.BucketingModule(lambda k: (net, ("data",), None), default_bucket_key=5, context=mx.cpu(0),
                               group2ctxs={"dev2": mx.cpu(1)})


def test_an_attribute_that_is_no_parameter_is_kept_not_refused():
    """MXNet 1.9.1 refuses a non-parameter key on an op node ("Cannot find argument");
    jbind keeps it as an attribute, at creation and in a JSON file, computing the same."""
    import json

    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc", attr={"mood": "happy"})
    assert net.attr_dict()["fc"]["mood"] == "happy"
    doc = json.loads(mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=3, name="fc").tojson())
    doc["nodes"][-1]["attrs"]["foo"] = "1"
    loaded = mx.sym.load_json(json.dumps(doc))
    assert loaded.attr_dict()["fc"]["foo"] == "1"
    assert loaded.infer_shape(data=(2, 4))[1] == [(2, 3)]


def test_every_op_takes_every_parameter_mxnet_declares():
    """What makes keeping unknown attributes safe: the parameter names MXNet 1.9.1 declares
    for each op jbind registers (tests/golden/op_params.json) are all jbind's."""
    import json
    import os

    from jbind.ops._base import REGISTRY
    with open(os.path.join(os.path.dirname(__file__), "golden", "op_params.json")) as f:
        declared = json.load(f)
    assert sorted(n for n in REGISTRY if n not in declared) == []  # every op of jbind's is MXNet's
    missing = {name: sorted(set(declared[name]) - set(cls.param_names())) for name, cls in REGISTRY.items()}
    assert {k: v for k, v in missing.items() if v} == {}
    order = {name: cls.declared_params() for name, cls in REGISTRY.items()
             if list(cls.declared_params()) != declared[name]}
    assert order == {}  # positional parameters fill them in MXNet's order


def _run(sym, args, grads=(), head=None, type_dict=None):
    """Forward (and backward with `head`, default ones) of `sym` on numpy `args`."""
    req = {k: ("write" if k in grads else "null") for k in sym.list_arguments()}
    exe = sym.simple_bind(mx.cpu(), grad_req=req, type_dict=type_dict, **{k: v.shape for k, v in args.items()})
    for k, v in args.items():
        exe.arg_dict[k][:] = v
    out = exe.forward(is_train=bool(grads))[0].asnumpy()
    if not grads:
        return out
    exe.backward([mx.nd.array(np.ones(out.shape) if head is None else head)])
    return out, {k: exe.grad_dict[k].asnumpy() for k in grads}


def test_out_of_range_indices_in_a_graph_are_clipped_or_dropped():
    """A compiled graph cannot raise on values: gather_nd clips out-of-range indices (MXNet
    raises; mx.nd.gather_nd still does) and scatter_nd drops such writes (MXNet writes out
    of bounds)."""
    import pytest
    S, V = mx.sym, mx.sym.Variable
    a, i = np.array([1.0, 2.0, 3.0]), np.array([[0.0, 5.0]])
    np.testing.assert_array_equal(_run(S.gather_nd(V("a"), V("i"), name="g"), {"a": a, "i": i}), [1, 3])
    with pytest.raises(IndexError, match="out of bounds"):
        mx.nd.gather_nd(mx.nd.array(a), mx.nd.array(i))
    got = _run(S.scatter_nd(V("d"), V("i"), shape=(3,), name="s"), {"d": np.array([1.0, 2.0]), "i": np.array([[0.0, 7.0]])})
    np.testing.assert_array_equal(got, [1, 0, 0])


def test_gradients_mxnet_refuses_are_given():
    """batch_take's data and sort along an axis are differentiated (MXNet refuses, or its
    backward fails); argmax_channel and softmax_cross_entropy's label get zeros (MXNet raises)."""
    S, V = mx.sym, mx.sym.Variable
    _, g = _run(S.batch_take(V("a"), V("i"), name="b"), {"a": np.arange(6.0).reshape(2, 3), "i": np.array([2, 0])},
                grads=("a",), type_dict={"a": "float32", "i": "int32"})
    np.testing.assert_array_equal(g["a"], [[0, 0, 1], [1, 0, 0]])
    _, g = _run(S.sort(V("a"), axis=1, name="s"), {"a": np.array([[3.0, 1.0, 2.0]])}, grads=("a",),
                head=np.array([[1.0, 2.0, 3.0]]))
    np.testing.assert_array_equal(g["a"], [[3, 1, 2]])
    _, g = _run(S.argmax_channel(V("a"), name="m"), {"a": np.array([[3.0, 1.0, 2.0]])}, grads=("a",))
    np.testing.assert_array_equal(g["a"], 0)
    _, g = _run(S.softmax_cross_entropy(V("a"), V("l"), name="ce"), {"a": np.array([[3.0, 1.0, 2.0]]),
                                                                   "l": np.array([1.0])}, grads=("a", "l"))
    np.testing.assert_array_equal(g["l"], 0)


def test_inputs_mxnet_mishandles_are_clear_errors():
    """Where MXNet 1.9.1 returns a zero-size array, reads or writes out of bounds, crashes at
    run time or silently reshapes a given array, jbind raises a named error when binding."""
    import pytest
    S, V = mx.sym, mx.sym.Variable
    bad = [(lambda: S.diag(V("a"), k=4, name="d").infer_shape(a=(3, 4)), "no diagonal"),
           (lambda: S.cumsum(V("a"), axis=-1, name="c").infer_shape(a=(3, 4)), "give axis=1"),
           (lambda: S.unravel_index(V("a"), shape=(3, 4), name="u").infer_shape(a=(2, 2)), "must be 1-D"),
           (lambda: S.batch_take(V("a"), V("i"), name="b").infer_shape(a=(2, 3, 4), i=(2,)), "batch_take"),
           (lambda: S.GroupNorm(V("a"), V("g"), V("b"), num_groups=2, name="gn").infer_shape(a=(2, 4, 3), g=(4,)),
            r"given \(4,\) but inferred \(2,\)"),
           (lambda: S.SVMOutput(V("a"), name="svm").infer_shape(a=(3,)), "at least 2 dimensions"),
           (lambda: S.softmin(V("a"), use_length=True), "takes no length input"),
           (lambda: S.split_v2(V("a"), (2, 2), axis=1).infer_shape(a=(3, 4)), r"part 1 \[2:2\], which is empty")]
    for build, match in bad:
        with pytest.raises(mx.MXNetError, match=match):
            build()


def test_ctc_lengths_are_clipped_to_the_sequence_and_the_label():
    """CTCLoss clips data_lengths / label_lengths past the sequence or the label (MXNet reads
    out of bounds): a data length of 9 over 4 steps is the whole sequence."""
    S, V = mx.sym, mx.sym.Variable
    data, label = np.random.default_rng(0).normal(size=(4, 1, 3)), np.array([[1.0, 2.0]])
    whole = _run(S.CTCLoss(V("d"), V("l"), name="c"), {"d": data, "l": label})
    clipped = _run(S.CTCLoss(V("d"), V("l"), V("n"), use_data_lengths=True, name="c"),
                   {"d": data, "l": label, "n": np.array([9.0])})
    np.testing.assert_allclose(clipped, whole, rtol=1e-6)


def test_sampling_draws_jax_numbers_from_mxnets_distributions():
    """Samplers draw from jax.random (keyed by mx.random.seed): MXNet's distribution, not its
    numbers; parameters MXNet leaves undefined are refused when the symbol is built."""
    import pytest
    mx.random.seed(0)
    draws = mx.nd.random.normal(1.0, 2.0, shape=(20000,)).asnumpy()
    assert abs(draws.mean() - 1.0) < 0.05 and abs(draws.std() - 2.0) < 0.05
    with pytest.raises(mx.MXNetError, match="random_negative_binomial|p"):
        mx.sym.random_negative_binomial(k=1, p=0.0, shape=(2,))
    with pytest.raises(mx.MXNetError, match="randint"):
        mx.sym.random_randint(low=3, high=3, shape=(2,))


def _custom_probe(op_type, calls):
    """Register `op_type`: forward adds 1 and counts itself in an aux state; calls are logged."""
    class Op(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            calls.append("forward")
            aux[0][:] = aux[0] + 1
            self.assign(out_data[0], req[0], in_data[0] + 1)

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            calls.append("backward")
            self.assign(in_grad[0], req[0], out_grad[0])

    @mx.operator.register(op_type)
    class Prop(mx.operator.CustomOpProp):
        def list_auxiliary_states(self):
            return ["count"]

        def infer_shape(self, in_shape):
            return in_shape, [in_shape[0]], [[1]]

        def create_operator(self, ctx, shapes, dtypes):
            calls.append(str(ctx))
            return Op()


def test_custom_ops_run_on_the_host_and_forward_again_at_backward():
    """A Custom op's create_operator gets cpu(0) when a graph compiles; backward() with head gradients
    runs the forward again; its aux writes change at backward(), not at an inference forward."""
    calls = []
    _custom_probe("diff_probe", calls)
    exe = mx.sym.Custom(mx.sym.Variable("x"), op_type="diff_probe", name="p").simple_bind(mx.cpu(1), x=(2,))
    count = exe.aux_dict["p_count"]
    exe.forward(is_train=False)[0].asnumpy()
    exe.forward(is_train=True)[0].asnumpy()
    assert count.asnumpy().tolist() == [0.0]  # MXNet: [2.0]
    exe.backward([mx.nd.ones((2,))])
    assert count.asnumpy().tolist() == [1.0]
    assert calls == ["cpu(0)", "forward"] * 3 + ["backward"]  # MXNet: cpu(1), forward, forward, backward


def test_attribute_scopes_do_not_reach_a_custom_op_prop():
    """mx.AttrScope attributes are not keywords of a Custom op's Prop (MXNet passes them, and crashes)."""
    _custom_probe("diff_scoped", [])
    with mx.AttrScope(ctx_group="dev1", mood="calm"):
        net = mx.sym.Custom(mx.sym.Variable("x"), op_type="diff_scoped", name="s")
    assert mx.sym.load_json(net.tojson()).infer_shape(x=(3,))[1] == [(3,)]


def test_optimizer_states_of_another_layout_are_an_error():
    """MXNet runs plain SGD on a momentum state as momentum 0; jbind names both layouts."""
    import pytest
    saved = mx.optimizer.get_updater(mx.optimizer.SGD(momentum=0.9))
    saved(0, mx.nd.array([0.5]), mx.nd.array([1.0]))
    plain = mx.optimizer.get_updater(mx.optimizer.SGD())
    plain.set_states(saved.get_states())
    with pytest.raises(mx.base.MXNetError, match="keeps 0 state array"):
        plain(0, mx.nd.array([0.5]), mx.nd.array([1.0]))


def test_states_naming_other_globals_are_an_error(tmp_path):
    """A .states file naming a global beyond NDArrays, containers and jbind's optimizers is refused (MXNet runs it)."""
    import pickle

    import pytest
    marker = tmp_path / "ran"
    blob = b"cbuiltins\nexec\n(V" + f"open({str(marker)!r}, 'w').close()".encode() + b"\ntR."
    updater = mx.optimizer.get_updater(mx.optimizer.SGD())
    with pytest.raises(mx.base.MXNetError, match=r"builtins\.exec"):
        updater.set_states(blob)
    with pytest.raises(mx.base.MXNetError, match="not an Optimizer"):  # MXNet: the optimizer becomes "sgd"
        updater.set_states(pickle.dumps(({}, "sgd")))
    assert not marker.exists() and isinstance(updater.optimizer, mx.optimizer.SGD)

def test_counts_and_array_sizes_are_bounded():
    """A count parameter over JBIND_MAX_COUNT or an array over JBIND_MAX_ELEMENTS is an MXNetError; MXNet tries to build it."""
    import pytest
    with pytest.raises(mx.base.MXNetError, match="JBIND_MAX_COUNT"):
        mx.sym.SliceChannel(mx.sym.Variable("x"), num_outputs=10 ** 9)
    with pytest.raises(mx.base.MXNetError, match="JBIND_MAX_ELEMENTS"):
        mx.sym.zeros(shape=(10 ** 6, 10 ** 6)).infer_shape()


def test_bind_refuses_more_memory_than_the_device_has(monkeypatch):
    """simple_bind / bind / Module.bind refuse more bytes than the device has available; MXNet starts allocating."""
    import pytest
    from jbind import _limits
    monkeypatch.setattr(_limits, "available_bytes", lambda device: 64 << 20)
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=4096, name="fc")
    with pytest.raises(mx.base.MXNetError, match="available"):
        net.simple_bind(mx.cpu(), data=(1, 8192))


def test_recordio_index_offsets_outside_the_file_are_refused_at_open(tmp_path):
    """An .idx offset outside the .rec is an MXNetError when the reader opens; MXNet's read_idx fails or returns None later."""
    import pytest
    rec, idx = str(tmp_path / "a.rec"), str(tmp_path / "a.idx")
    w = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
    w.write_idx(0, b"abc")
    w.close()
    with open(idx, "w") as f:
        f.write("0\t1000\n")
    with pytest.raises(mx.base.MXNetError, match="outside"):
        mx.recordio.MXIndexedRecordIO(idx, rec, "r")

def test_autograd_backward_replays_ops_in_their_recorded_mode():
    """autograd.backward(train_mode=...) does not change how recorded ops replay (Dropout keeps its mask)."""
    x = mx.nd.ones((8, 8))
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Dropout(x, p=0.5)
    y.backward(train_mode=False)
    np.testing.assert_array_equal(x.grad.asnumpy(), y.asnumpy())


def test_autograd_get_symbol_refuses_create_graph_results():
    """autograd.get_symbol of a grad(create_graph=True) result raises MXNetError (MXNet shows its backward ops)."""
    x = mx.nd.ones((2,))
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.sin(x)
    dx, = mx.autograd.grad(y, x, create_graph=True)
    try:
        mx.autograd.get_symbol(dx)
    except mx.base.MXNetError as e:
        assert "no Symbol form" in str(e)
    else:
        raise AssertionError("get_symbol of a create_graph result should raise")

def test_py_str_passes_a_str_through():
    """mx.base.py_str returns a str unchanged (MXNet's decodes bytes only and raises on a str)."""
    assert mx.base.py_str("fc1_output") == "fc1_output" and mx.base.py_str(b"fc1") == "fc1"


def test_use_np_functions_raise_when_called():
    """mx.test_utils.use_np decorates, but the function raises MXNetError when called: jbind has no mx.np."""
    import pytest

    @mx.test_utils.use_np
    def needs_np():
        return 1
    with pytest.raises(mx.MXNetError, match="use_np"):
        needs_np()


def test_sparse_components_are_checked_when_made():
    """csr_matrix / row_sparse_array refuse a bad indptr or unsorted indices (MXNet accepts them)."""
    import pytest
    with pytest.raises(mx.base.MXNetError, match="sorted and unique"):
        mx.nd.sparse.row_sparse_array(([[1.0], [2.0]], [2, 0]), shape=(3, 1))
    with pytest.raises(mx.base.MXNetError, match="bad indptr"):
        mx.nd.sparse.csr_matrix(([1.0], [0], [0, 0]), shape=(1, 2))


def test_sparse_ops_without_sparse_kernels_return_dense():
    """sin / relu / ... of a sparse array is a dense array (MXNet keeps zero-preserving unary ops sparse)."""
    assert mx.nd.sin(mx.nd.array([[0, 1]]).tostype("csr")).stype == "default"


def test_row_sparse_gradient_stores_rows_with_nonzero_gradient():
    """A row_sparse gradient keeps the rows whose gradient is nonzero (MXNet's Embedding: every looked-up row)."""
    w = mx.nd.ones((4, 2))
    w.attach_grad(stype="row_sparse")
    with mx.autograd.record():
        y = mx.nd.Embedding(mx.nd.array([1, 3]), w, input_dim=4, output_dim=2, sparse_grad=True)
        loss = (y * mx.nd.array([[1, 1], [0, 0]])).sum()
    loss.backward()
    assert w.grad.indices.asnumpy().tolist() == [1]


def test_sparse_inputs_are_recorded_as_dense_values():
    """Under autograd.record(), an op on a sparse array sees its dense value and gives a dense result."""
    x = mx.nd.array([[0, 1], [2, 0]]).tostype("row_sparse")
    x.attach_grad()
    with mx.autograd.record():
        y = x * 2
    assert y.stype == "default"
    y.backward()
    assert x.grad.stype == "row_sparse" and x.grad.asnumpy().tolist() == [[2, 2], [2, 2]]


def test_graph_arrays_are_dense_whatever_a_variables_stype():
    """A variable declared with stype='csr' / 'row_sparse' binds to a dense array (MXNet allocates sparse)."""
    v = mx.sym.var("v", stype="row_sparse")
    exe = (v * 2).simple_bind(mx.cpu(), v=(3, 2))
    assert exe.arg_dict["v"].stype == "default" and exe.grad_dict["v"].stype == "default"


def test_amp_init_leaves_ndarray_operators_to_jax_promotion():
    """After amp.init(), NDArray arithmetic follows JAX's promotion (float16 ** 2 stays float16), not the wrapped ops."""
    from jbind.contrib.amp import amp
    amp.init()
    try:
        h = mx.nd.ones((2,), dtype="float16")
        assert (h ** 2).dtype == np.float16            # MXNet: _power_scalar runs in float32
        assert mx.nd.broadcast_power(h, h).dtype == np.float32  # the wrapped function casts
        assert (h + mx.nd.ones((2,))).dtype == np.float32
    finally:
        amp._reset()

def test_from_dlpack_takes_capsules_and_protocol_objects():
    """mx.nd.from_dlpack takes a PyCapsule (taken to be on the current context's device) or any object with __dlpack__."""
    a = mx.nd.array([1.0, 2.0])
    assert mx.nd.from_dlpack(mx.nd.to_dlpack_for_read(a)).asnumpy().tolist() == [1.0, 2.0]
    assert mx.nd.from_dlpack(np.arange(3.0)).asnumpy().tolist() == [0.0, 1.0, 2.0]


def test_a_read_view_misses_dlpack_writes_into_its_base():
    """A view read before a DLPack consumer writes into its base keeps its value; a partial view cannot export for write."""
    import ctypes

    class Consumer:
        def __init__(self, capsule):
            self.capsule = capsule

        def __dlpack__(self, **kwargs):
            return self.capsule

        def __dlpack_device__(self):
            return (1, 0)

    x = mx.nd.array([1.0, 2.0, 3.0, 4.0])
    mem = np.from_dlpack(Consumer(x.to_dlpack_for_write()))
    tail = x[2:]
    assert tail.asnumpy().tolist() == [3, 4]
    ctypes.c_float.from_address(mem.ctypes.data + 8).value = 30.0
    assert x.asnumpy().tolist() == [1, 2, 30, 4] and tail.asnumpy().tolist() == [3, 4]
    with pytest.raises(mx.base.MXNetError, match="view of part"):
        tail.to_dlpack_for_write()


def test_np_shape_zero_dims_of_symbols_read_as_unknown():
    """Under np_shape(True) symbolic shape inference still treats a 0 dimension as unknown (MXNet: a real zero size)."""
    with mx.np_shape():
        y = mx.sym.transpose(mx.sym.var("x"))
        assert y.infer_shape_partial(x=(0, 3))[1] == [(3, -1)]


def test_operators_left_out_are_listed_and_absent():
    """The MXNet 1.9.1 operators jbind leaves out are named in the README, and none of them is registered."""
    import pathlib
    import re
    from jbind.ops import ALIASES, REGISTRY
    text = (pathlib.Path(__file__).resolve().parents[1] / "README.md").read_text()
    line = next(ln for ln in text.split("\n- ") if ln.startswith("MXNet 1.9.1 operators jbind leaves out"))
    names = re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", line)
    assert len(names) > 20
    assert not [n for n in names if n in REGISTRY or n in ALIASES]


def test_mx_numpy_imports_but_has_no_arrays():
    """`import mxnet.numpy` works, but every name in it raises AttributeError: jbind has no mx.np arrays."""
    import jbind.numpy as mxnp
    assert mx.np is mxnp
    with pytest.raises(AttributeError, match="no mx.np"):
        mxnp.zeros
    assert mx.util.is_np_array() is False


def test_gluon_optimize_for_is_refused():
    """HybridBlock.optimize_for is an MXNetError: jbind has no subgraph backends, XLA compiles the block."""
    from jbind import gluon
    with pytest.raises(mx.MXNetError, match="no subgraph backends"):
        gluon.nn.Dense(2).optimize_for(mx.nd.ones((1, 2)), backend="MKLDNN")


def test_gluon_download_overwrite_replaces_the_file(tmp_path):
    """gluon.utils.download(overwrite=True) replaces the file (MXNet 1.9.1 downloads, then keeps the old one)."""
    from unittest import mock
    from jbind.gluon import utils
    (tmp_path / "f.bin").write_bytes(b"old")
    response = mock.Mock(status_code=200, iter_content=lambda chunk_size: iter([b"new"]))
    with mock.patch.dict("sys.modules", {"requests": mock.Mock(get=mock.Mock(return_value=response))}):
        utils.download("http://example.com/f.bin", path=str(tmp_path), overwrite=True)
    assert (tmp_path / "f.bin").read_bytes() == b"new"


def test_model_zoo_pretrained_reads_a_local_file_only(tmp_path):
    """model_zoo `pretrained=True` never downloads: an absent or different file is an MXNetError."""
    from jbind.gluon.model_zoo import vision
    with pytest.raises(mx.MXNetError, match="absent; jbind does not download"):
        vision.get_model("squeezenet1.0", pretrained=True, root=str(tmp_path))


def test_vision_datasets_never_download_and_skip_the_sha1(tmp_path):
    """gluon.data.vision datasets never download and read any well-formed file (no SHA-1 check)."""
    import numpy as np
    from jbind.gluon.data import vision
    with pytest.raises(mx.MXNetError, match="absent"):
        vision.CIFAR10(root=str(tmp_path), train=False)
    (tmp_path / "test_batch.bin").write_bytes(np.zeros(3073, np.uint8).tobytes())
    assert len(vision.CIFAR10(root=str(tmp_path), train=False)) == 1


def test_dataloader_workers_send_arrays_not_pickles():
    """DataLoader worker processes send samples back as arrays and scalars; other objects are an MXNetError."""
    from jbind.gluon.data import _wire
    with pytest.raises(mx.MXNetError, match="thread_pool=True"):
        _wire.encode([{"not": "an array"}])


def test_resize_of_uint8_rounds_the_exact_bilinear_value():
    """transforms.Resize on uint8 rounds the exact bilinear value (OpenCV's fixed point may differ by 1)."""
    import numpy as np
    from jbind.gluon.data.vision import transforms
    img = np.array([[0, 255], [255, 0]], np.uint8)[:, :, None].repeat(3, 2)
    out = transforms.Resize((3, 3))(mx.nd.array(img, dtype=np.uint8)).asnumpy()
    assert out[1, 1, 0] == 128  # 127.5 rounded half to even


def test_interval_sampler_len_counts_what_it_yields():
    """contrib.data.IntervalSampler(rollover=False) has the length of what it yields (MXNet says `length`)."""
    from jbind.gluon.contrib.data import IntervalSampler
    assert len(IntervalSampler(13, 3, rollover=False)) == 5


def test_random_saturation_blends_with_the_whole_gray_level():
    """transforms.RandomSaturation blends with 0.299 R + 0.587 G + 0.114 B (MXNet 1.9.1's kernel: 0.114 B only)."""
    import numpy as np
    from jbind.gluon.data.vision.transforms import _saturation
    red = np.array([[[200.0, 0.0, 0.0]]])
    np.testing.assert_allclose(_saturation(red, 0.0), [[[59.8, 59.8, 59.8]]])

def test_ndarray_operators_promote_mixed_dtypes():
    """NDArray operators on two arrays of different dtypes follow JAX's promotion (MXNet raises)."""
    a, b = mx.nd.ones((2,), dtype="float64"), mx.nd.ones((2,))
    assert (a + b).dtype == np.float64 and (b * mx.nd.ones((2,), dtype="int32")).dtype == np.float32
    with pytest.raises(mx.base.MXNetError):  # by name, as MXNet's
        mx.nd.elemwise_add(a, b)

def test_sparse_embedding_weight_gradient_is_dense():
    """contrib.SparseEmbedding gives its weight a dense gradient (MXNet's is row_sparse)."""
    out = mx.sym.contrib.SparseEmbedding(data=mx.sym.Variable("d"), weight=mx.sym.Variable("w", stype="row_sparse"),
                                         input_dim=3, output_dim=2)
    exe = out.simple_bind(mx.cpu(), d=(2,), grad_req={"d": "null", "w": "write"})
    exe.forward(is_train=True, d=np.array([0, 2]), w=np.ones((3, 2)))
    exe.backward(mx.nd.ones((2, 2)))
    g = exe.grad_dict["w"]
    assert g.stype == "default" and g.asnumpy().tolist() == [[1, 1], [0, 0], [1, 1]]


def test_image_augmenters_leave_their_input_unchanged():
    """mx.image's color jitters return a new array; MXNet's scale their input NDArray in place."""
    src = mx.nd.ones((4, 4, 3)) * 100
    out = mx.image.BrightnessJitterAug(0.5)(src)
    assert (src.asnumpy() == 100).all() and out.shape == (4, 4, 3)


def test_image_record_iter_short_last_batch_reports_its_pad():
    """ImageRecordIter(round_batch=False): the short last batch has pad = missing images, zero-filled (MXNet: pad 0)."""
    import os
    pytest.importorskip("PIL")
    rec = os.path.join(os.path.dirname(__file__), "golden", "image", "images.rec")
    batches = list(mx.io.ImageRecordIter(path_imgrec=rec, data_shape=(3, 8, 8), batch_size=4, round_batch=False))
    assert [b.pad for b in batches] == [0, 1] and (batches[1].data[0].asnumpy()[3] == 0).all()


def test_image_record_iter_refuses_path_imglist():
    """ImageRecordIter refuses path_imglist and shuffle_chunk_size (not implemented) by name."""
    import os
    rec = os.path.join(os.path.dirname(__file__), "golden", "image", "images.rec")
    with pytest.raises(mx.MXNetError, match="path_imglist"):
        mx.io.ImageRecordIter(path_imgrec=rec, data_shape=(3, 8, 8), batch_size=4, path_imglist="a.lst")


def test_image_record_iter_warps_bilinearly():
    """ImageRecordIter's rotation / scale warp interpolates bilinearly whatever inter_method (MXNet: as asked)."""
    import os
    pytest.importorskip("PIL")
    rec = os.path.join(os.path.dirname(__file__), "golden", "image", "images.rec")
    outs = [next(mx.io.ImageRecordIter(path_imgrec=rec, data_shape=(3, 16, 16), batch_size=2, rotate=30,
                                       inter_method=m)).data[0].asnumpy() for m in (2, 1)]
    np.testing.assert_array_equal(outs[0], outs[1])


def test_lbsgd_keeps_its_gradient_sum_in_the_state():
    """LBSGD's state is (momentum, gradient sum); MXNet's is the momentum, the sum kept in the optimizer."""
    opt = mx.optimizer.create("lbsgd", momentum=0.9, batch_scale=2)
    w = mx.nd.ones((2,))
    state = opt.create_state(0, w)
    opt.update(0, w, mx.nd.ones((2,)), state)
    assert isinstance(state, tuple) and len(state) == 2 and (state[1].asnumpy() == 1).all()


def test_integer_arguments_get_gradients_only_through_cast():
    """An integer argument read by an op other than Cast gets a zero gradient; MXNet computes it in integers."""
    x = mx.sym.Variable("x", dtype="int32")
    exe = (x * 2).simple_bind(mx.cpu(), x=(3,))
    exe.arg_arrays[0][:] = np.array([1, 2, 3])
    exe.forward(is_train=True)
    exe.backward(mx.nd.array([1, 2, 3], dtype="int32"))
    assert exe.grad_arrays[0].dtype == np.int32 and not exe.grad_arrays[0].asnumpy().any()  # MXNet: [2 4 6]


def test_op_hook_skips_training_calls():
    """register_op_hook reports inference calls only; a call under autograd.record() reports nothing."""
    from jbind.gluon import nn
    net = nn.Dense(2, in_units=3)
    net.initialize()
    net.hybridize()
    seen = []
    net.register_op_hook(lambda name, op, arr: seen.append(name))
    with mx.autograd.record():
        net(mx.nd.ones((1, 3)))
    assert seen == []
    net(mx.nd.ones((1, 3)))
    assert seen == [f"{net.prefix}fwd_output"]


def test_eager_take_raise_fails_at_the_call():
    """An eager mx.nd.take(mode='raise') with an index out of range raises at the call, not when its result is read."""
    with pytest.raises(mx.base.MXNetError, match="out of bound"):
        mx.nd.take(mx.nd.array([1, 2, 3]), mx.nd.array([3]), mode="raise")


def test_parameters_an_op_lacks_are_errors_even_where_it_takes_none():
    """MXNet 1.9.1 drops unknown keywords on ops without parameters; jbind names them."""
    a, b = mx.nd.ones((2, 3)), mx.nd.ones((2, 1))
    with pytest.raises(mx.base.MXNetError, match="broadcast_maximum.*unknown parameter.*axis"):
        mx.nd.broadcast_maximum(a, b, axis=1)
    with pytest.raises(mx.base.MXNetError, match="unknown parameter.*axis"):
        mx.sym.broadcast_maximum(mx.sym.var("a"), mx.sym.var("b"), axis=1)
    assert mx.nd.broadcast_maximum(a, b).shape == (2, 3)


def test_trainer_applies_a_row_sparse_gradient_to_every_row():
    """gluon.Trainer's compiled update decays rows a sparse gradient does not touch (wd);
    MXNet's lazy update leaves them, as jbind's optimizers called directly do."""
    emb = mx.gluon.nn.Embedding(5, 2, sparse_grad=True)
    emb.initialize(mx.init.One())
    trainer = mx.gluon.Trainer(emb.collect_params(), "sgd", {"learning_rate": 0.1, "wd": 0.1})
    with mx.autograd.record():
        loss = emb(mx.nd.array([0])).sum()
    loss.backward()
    trainer.step(1)
    w = emb.weight.data().asnumpy()
    np.testing.assert_allclose(w[1:], 0.99, rtol=1e-6)        # untouched rows decayed
    np.testing.assert_allclose(w[0], 1 - 0.1 * (1 + 0.1), rtol=1e-6)

    opt = mx.optimizer.SGD(learning_rate=0.1, wd=0.1)
    weight = mx.nd.ones((5, 2))
    grad = mx.nd.sparse.row_sparse_array((np.ones((1, 2), np.float32), [0]), shape=(5, 2))
    opt.update(0, weight, grad, opt.create_state(0, weight))
    np.testing.assert_allclose(weight.asnumpy()[1:], 1.0)      # lazy: only row 0 moves


def test_two_variables_of_one_name_are_an_error():
    """Two layers named alike make two `fc_weight`s: an error in jbind, a warning in MXNet's plot."""
    net = mx.sym.FullyConnected(mx.sym.var("data"), name="fc", num_hidden=4)
    net = mx.sym.FullyConnected(net, name="fc", num_hidden=2)
    with pytest.raises(mx.base.MXNetError, match="several different variables named.*fc_weight"):
        net.list_arguments()
    with pytest.raises(mx.base.MXNetError, match="fc_bias"):
        net.infer_shape(data=(3, 5))


def test_second_derivative_of_arcsinh_has_the_true_sign():
    """d2/dx2 arcsinh(x) = -x / (x^2 + 1)^1.5 (MXNet 1.9.1's higher-order gradient flips the sign)."""
    x = mx.nd.array([-1.5, 0.5, 2.0])
    x.attach_grad()
    with mx.autograd.record():
        first = mx.autograd.grad(mx.nd.arcsinh(x), [x], create_graph=True, retain_graph=True)[0]
    first.backward()
    v = x.asnumpy()
    np.testing.assert_allclose(first.asnumpy(), 1 / np.sqrt(v * v + 1), rtol=1e-6)
    np.testing.assert_allclose(x.grad.asnumpy(), -v / (v * v + 1) ** 1.5, rtol=1e-5)


def test_while_loop_pads_its_step_outputs_with_zeros():
    """while_loop's output rows past the last step are zeros; MXNet leaves them unwritten."""
    i = mx.sym.var("i")
    outs, _ = mx.sym.contrib.while_loop(lambda i: i < 2, lambda i: ([i * 3], [i + 1]), [i], max_iterations=4)
    got = outs[0].eval(i=mx.nd.zeros((1,)))[0].asnumpy()
    np.testing.assert_array_equal(got, [[0.0], [3.0], [0.0], [0.0]])
    nd_outs, _ = mx.nd.contrib.while_loop(lambda i: i < 2, lambda i: ([i * 3], [i + 1]), [mx.nd.zeros((1,))],
                                          max_iterations=4)
    np.testing.assert_array_equal(nd_outs[0].asnumpy(), got)


def test_estimator_auto_mode_minimizes_a_metric_without_acc_or_f1(tmp_path):
    """Estimator handlers' mode='auto' picks `less` unless the metric's name holds 'acc' or 'f1' (MXNet: `greater`)."""
    import warnings
    from jbind.gluon.contrib.estimator import CheckpointHandler, EarlyStoppingHandler
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert EarlyStoppingHandler(mx.metric.Loss("training l2loss")).monitor_op is np.less
        assert EarlyStoppingHandler(mx.metric.Accuracy()).monitor_op is np.greater
        assert CheckpointHandler(str(tmp_path), monitor=mx.metric.MSE(), save_best=True).monitor_op is np.less


def test_checkpoint_handler_removes_old_checkpoints_by_exact_name(tmp_path):
    """CheckpointHandler removes an old checkpoint's .params and .states only (MXNet: every file starting so)."""
    import types
    from jbind.gluon.contrib.estimator import CheckpointHandler
    net = mx.gluon.nn.Dense(1, in_units=1)
    net.initialize()
    est = types.SimpleNamespace(net=net, trainer=mx.gluon.Trainer(net.collect_params(), "sgd"))
    (tmp_path / "m-epoch0batch10.params").write_bytes(b"")
    h = CheckpointHandler(str(tmp_path), model_prefix="m", max_checkpoints=1)
    h._save_params_and_trainer(est, "m-epoch0batch1")
    h._save_params_and_trainer(est, "m-epoch0batch2")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m-epoch0batch10.params", "m-epoch0batch2.params",
                                                          "m-epoch0batch2.states"]


def test_bind_with_an_unknown_name_and_a_misshaped_head_gradient_are_errors():
    """MXNet 1.9.1 ignores an args dict entry the graph lacks and takes a head gradient of
    another shape; jbind names both (an array for a missing input is usually a typo)."""
    x = mx.sym.var("x")
    y = x * 2
    with pytest.raises(mx.base.MXNetError, match=r"unknown inputs \['v2'\]"):
        y.bind(mx.cpu(), {"x": mx.nd.ones((2, 3)), "v2": mx.nd.ones(2)})
    exe = y.bind(mx.cpu(), {"x": mx.nd.ones((2, 3)), "v2": None}, args_grad={"x": mx.nd.zeros((2, 3))})
    exe.forward(is_train=True)
    with pytest.raises(mx.base.MXNetError, match=r"head gradient .* has shape \(3, 2\), output has \(2, 3\)"):
        exe.backward([mx.nd.ones((3, 2))])
