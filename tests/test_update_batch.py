"""Module.update and an Updater given a list of parameters run the optimizer's functional
step over all of them as one compiled call, with the numbers of one `update` per parameter."""
import numpy as np
import pytest

import jbind as mx


def _module(opt, params):
    data = mx.sym.Variable("data")
    fc1 = mx.sym.FullyConnected(data, num_hidden=6, name="fc1")
    fc2 = mx.sym.FullyConnected(mx.sym.Activation(fc1, act_type="tanh"), num_hidden=3, name="fc2")
    out = mx.sym.SoftmaxOutput(fc2, name="softmax")
    mod = mx.mod.Module(out, context=mx.cpu(0))
    mod.bind([("data", (4, 5))], [("softmax_label", (4,))])
    mod.init_params(mx.init.Uniform(0.5))
    mod.init_optimizer(optimizer=opt, optimizer_params=dict(params))
    return mod


@pytest.mark.parametrize("opt,params", [
    ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01}),
    ("adam", {"learning_rate": 0.01, "wd": 0.001, "clip_gradient": 0.5}),
])
def test_module_update_matches_one_update_per_parameter(opt, params):
    rng = np.random.RandomState(0)
    batch = mx.io.DataBatch([mx.nd.array(rng.randn(4, 5))], [mx.nd.array([0, 1, 2, 1])])
    mod = _module(opt, params)
    mod._optimizer.set_lr_mult({"fc1_weight": 0.5})
    args, _ = mod.get_params()
    by_hand = {k: v.copy() for k, v in args.items()}
    hand_opt = mx.optimizer.create(opt, rescale_grad=mod._optimizer.rescale_grad, **params)
    hand_opt.set_lr_mult({"fc1_weight": 0.5})
    names = list(mod._exec_group.param_names)
    hand_opt.idx2name = dict(enumerate(names))
    hand_opt.set_wd_mult({})
    states = {i: hand_opt.create_state(i, by_hand[n]) for i, n in enumerate(names)}
    calls = []
    real = mod._optimizer._batch_step
    mod._optimizer._batch_step = lambda: calls.append(1) or real()
    for _ in range(3):
        mod.forward_backward(batch)
        grads = {n: mod._exec_group.grad_arrays[i][0].copy() for i, n in enumerate(names)}
        mod.update()
        for i, n in enumerate(names):
            hand_opt.update(i, by_hand[n], grads[n], states[i])  # same start, same gradients
    assert len(calls) == 3, "one batched call per Module.update"
    got, _ = mod.get_params()
    for n in names:
        np.testing.assert_allclose(got[n].asnumpy(), by_hand[n].asnumpy(), rtol=1e-5, atol=1e-6)


def test_updater_with_a_custom_update_keeps_per_parameter_calls():
    class Halve(mx.optimizer.Optimizer):
        def create_state(self, index, weight):
            return None

        def update(self, index, weight, grad, state):
            weight[:] = weight - 0.5 * grad

    upd = mx.optimizer.get_updater(Halve())
    w = [mx.nd.ones((2,)), mx.nd.ones((3,))]
    upd([0, 1], [mx.nd.ones((2,)), mx.nd.ones((3,)) * 2], w)
    np.testing.assert_allclose(w[0].asnumpy(), [0.5, 0.5])
    np.testing.assert_allclose(w[1].asnumpy(), [0.0, 0.0, 0.0])
