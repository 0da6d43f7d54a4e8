"""`mx.optimizer`: MXNet 1.x optimizers built on optax, with a functional path for compiled steps.

    opt = mx.optimizer.create('adam', learning_rate=1e-3, wd=1e-4)
    state = opt.init_state(weight)                                   # functional, jit-able
    weight, state = opt.step(weight, grad, state, lr, wd, t)
    updater = mx.optimizer.get_updater(opt); updater(0, grad_nd, weight_nd)   # imperative
"""
from ._base import Optimizer, create, register
from ._updater import Updater, get_updater
from ._lbsgd import LBSGD
from ._lamb_sgld import LAMB, SGLD
from ._optimizers import (DCASGD, FTML, NAG, SGD, AdaDelta, AdaGrad, Adam, Adamax, Ftrl, Nadam, RMSProp, Signum,
                          ccSGD)

__all__ = ["AdaDelta", "AdaGrad", "Adam", "Adamax", "DCASGD", "FTML", "Ftrl", "LAMB", "LBSGD", "NAG", "Nadam", "Optimizer",
           "RMSProp", "SGD", "SGLD", "Signum", "Updater", "ccSGD", "create", "get_updater", "register"]
