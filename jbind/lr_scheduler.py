"""Learning-rate schedulers, as `mxnet.lr_scheduler` (MXNet 1.9.1).

`__call__(num_update)` returns the learning rate for the largest update count of any
weight. As in MXNet, `FactorScheduler` and `MultiFactorScheduler` are stateful: they
decay `base_lr` in place as `num_update` grows and never undo it, so calling them with a
smaller count later returns the already decayed rate. `PolyScheduler` and
`CosineScheduler` store the last computed rate in `base_lr` and keep it past `max_update`.
"""
from __future__ import annotations

import logging
from math import cos, pi

__all__ = ["LRScheduler", "FactorScheduler", "MultiFactorScheduler", "PolyScheduler", "CosineScheduler"]


class LRScheduler:
    """Base class: `base_lr` plus an optional linear or constant warmup.

    Args:
        base_lr: the rate after warmup.
        warmup_steps: updates spent warming up (`num_update < warmup_steps`).
        warmup_begin_lr: the rate warmup starts from.
        warmup_mode: 'linear' (equal increments) or 'constant' (`warmup_begin_lr` throughout).
    """

    def __init__(self, base_lr: float = 0.01, warmup_steps: int = 0, warmup_begin_lr: float = 0,
                 warmup_mode: str = "linear"):
        self.base_lr = base_lr
        if not isinstance(warmup_steps, int):
            raise TypeError(f"warmup_steps must be an int, got {warmup_steps!r}")
        self.warmup_steps = warmup_steps
        self.warmup_final_lr = base_lr
        self.warmup_begin_lr = warmup_begin_lr
        if self.warmup_begin_lr > self.warmup_final_lr:
            raise ValueError("Base lr has to be higher than warmup_begin_lr")
        if self.warmup_steps < 0:
            raise ValueError("Warmup steps has to be positive or 0")
        if warmup_mode not in ("linear", "constant"):
            raise ValueError("Supports only linear and constant modes of warmup")
        self.warmup_mode = warmup_mode

    def get_warmup_lr(self, num_update: int) -> float:
        if num_update >= self.warmup_steps:
            raise ValueError(f"num_update={num_update} is past warmup_steps={self.warmup_steps}")
        if self.warmup_mode == "linear":
            increase = (self.warmup_final_lr - self.warmup_begin_lr) * float(num_update) / float(self.warmup_steps)
            return self.warmup_begin_lr + increase
        return self.warmup_begin_lr

    def __call__(self, num_update: int) -> float:
        raise NotImplementedError("must override this")


class FactorScheduler(LRScheduler):
    """`base_lr * factor**floor((num_update - 1) / step)`, floored at `stop_factor_lr` (stateful)."""

    def __init__(self, step: int, factor: float = 1, stop_factor_lr: float = 1e-8, base_lr: float = 0.01,
                 warmup_steps: int = 0, warmup_begin_lr: float = 0, warmup_mode: str = "linear"):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if step < 1:
            raise ValueError("Schedule step must be greater or equal than 1 round")
        if factor > 1.0:
            raise ValueError("Factor must be no more than 1 to make lr reduce")
        self.step = step
        self.factor = factor
        self.stop_factor_lr = stop_factor_lr
        self.count = 0

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while num_update > self.count + self.step:
            self.count += self.step
            self.base_lr *= self.factor
            if self.base_lr < self.stop_factor_lr:
                self.base_lr = self.stop_factor_lr
                logging.info("Update[%d]: now learning rate arrived at %0.5e, will not change in the future",
                             num_update, self.base_lr)
            else:
                logging.info("Update[%d]: Change learning rate to %0.5e", num_update, self.base_lr)
        return self.base_lr


class MultiFactorScheduler(LRScheduler):
    """Multiply `base_lr` by `factor` once `num_update` passes each entry of `step` (stateful)."""

    def __init__(self, step: list, factor: float = 1, base_lr: float = 0.01, warmup_steps: int = 0,
                 warmup_begin_lr: float = 0, warmup_mode: str = "linear"):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(step, list) or len(step) < 1:
            raise TypeError(f"step must be a non-empty list of ints, got {step!r}")
        for i, s in enumerate(step):
            if i != 0 and step[i] <= step[i - 1]:
                raise ValueError("Schedule step must be an increasing integer list")
            if s < 1:
                raise ValueError("Schedule step must be greater or equal than 1 round")
        if factor > 1.0:
            raise ValueError("Factor must be no more than 1 to make lr reduce")
        self.step = step
        self.cur_step_ind = 0
        self.factor = factor
        self.count = 0

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while self.cur_step_ind <= len(self.step) - 1:
            if num_update > self.step[self.cur_step_ind]:
                self.count = self.step[self.cur_step_ind]
                self.cur_step_ind += 1
                self.base_lr *= self.factor
                logging.info("Update[%d]: Change learning rate to %0.5e", num_update, self.base_lr)
            else:
                return self.base_lr
        return self.base_lr


class _DecayScheduler(LRScheduler):
    """After warmup, from `base_lr` down to `final_lr` at `max_update` along `_decay`,
    a function of the progress p in [0, 1] going from 1 to 0."""

    def __init__(self, max_update: int, base_lr, final_lr, warmup_steps, warmup_begin_lr, warmup_mode):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(max_update, int):
            raise TypeError(f"max_update must be an int, got {max_update!r}")
        if max_update < 1:
            raise ValueError("maximum number of updates must be strictly positive")
        self.base_lr_orig = self.base_lr
        self.max_update = max_update
        self.final_lr = final_lr
        self.max_steps = self.max_update - self.warmup_steps

    def _decay(self, progress: float) -> float:
        raise NotImplementedError

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            progress = float(num_update - self.warmup_steps) / float(self.max_steps)
            self.base_lr = self.final_lr + (self.base_lr_orig - self.final_lr) * self._decay(progress)
        return self.base_lr


class PolyScheduler(_DecayScheduler):
    """`final_lr + (base_lr - final_lr) * (1 - n / max_steps)**pwr` after warmup, n counted from its end."""

    def __init__(self, max_update: int, base_lr: float = 0.01, pwr: float = 2, final_lr: float = 0,
                 warmup_steps: int = 0, warmup_begin_lr: float = 0, warmup_mode: str = "linear"):
        super().__init__(max_update, base_lr, final_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        self.power = pwr

    def _decay(self, progress):
        return pow(1 - progress, self.power)


class CosineScheduler(_DecayScheduler):
    """`final_lr + (base_lr - final_lr) * (1 + cos(pi * n / max_steps)) / 2` after warmup."""

    def __init__(self, max_update: int, base_lr: float = 0.01, final_lr: float = 0, warmup_steps: int = 0,
                 warmup_begin_lr: float = 0, warmup_mode: str = "linear"):
        super().__init__(max_update, base_lr, final_lr, warmup_steps, warmup_begin_lr, warmup_mode)

    def _decay(self, progress):
        return (1 + cos(pi * progress)) / 2
