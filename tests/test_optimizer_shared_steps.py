"""jbind's optimizers share one compiled update among instances with the same settings."""
import numpy as np

import jbind as mx


def _step_once(opt, w=(1.0, 2.0), g=(0.5, -1.0)):
    weight = mx.nd.array(np.array(w, np.float32))
    state = opt.create_state(0, weight)
    opt.update(0, weight, mx.nd.array(np.array(g, np.float32)), state)
    return weight.asnumpy()


def test_same_settings_share_one_program():
    a = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, wd=0.01)
    b = mx.optimizer.SGD(learning_rate=0.3, momentum=0.9, wd=0.02)   # lr and wd are arguments, not settings
    assert a._compiled_step() is b._compiled_step()
    c = mx.optimizer.SGD(learning_rate=0.1, momentum=0.5)
    assert c._compiled_step() is not a._compiled_step()


def test_changing_a_setting_later_does_not_change_the_shared_program():
    a = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, rescale_grad=2.0)
    first = _step_once(a)
    a.rescale_grad = 0.5            # a new fingerprint for `a`: a program of its own
    changed = _step_once(a)
    b = mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, rescale_grad=2.0)
    np.testing.assert_array_equal(_step_once(b), first)
    assert not np.array_equal(changed, first)


def test_python_subclasses_keep_their_own_programs():
    class Mine(mx.optimizer.SGD):
        pass
    a, b = Mine(momentum=0.9), Mine(momentum=0.9)
    assert a._compiled_step() is not b._compiled_step()
