"""The thread-local recording / training flags of `mx.autograd` (a leaf module: NDArray
reads `STATE.recording` on its hot paths, one attribute look-up when nothing records)."""
from __future__ import annotations

import threading


class _State(threading.local):
    recording = False   # class defaults: a new thread starts neither recording nor training
    training = False


STATE = _State()


def is_recording() -> bool:
    """Whether operations on NDArrays are recorded for differentiation (this thread)."""
    return STATE.recording


def is_training() -> bool:
    """Whether ops run in training mode (Dropout drops, BatchNorm uses batch statistics)."""
    return STATE.training


def set_recording(is_recording: bool) -> bool:  # noqa: A002 - MXNet's keyword
    """Turn recording on or off for this thread; returns the previous state."""
    prev, STATE.recording = STATE.recording, bool(is_recording)
    return prev


def set_training(train_mode: bool) -> bool:
    """Turn training mode on or off for this thread; returns the previous state."""
    prev, STATE.training = STATE.training, bool(train_mode)
    return prev


class _RecordingStateScope:
    """Sets recording and / or training on entry (None leaves one as is) and restores
    both on exit, as MXNet's scope of the same name."""

    def __init__(self, is_record, train_mode):
        self._enter_record, self._enter_train = is_record, train_mode
        self._prev_record = self._prev_train = None

    def __enter__(self):
        if self._enter_record is not None:
            self._prev_record = set_recording(self._enter_record)
        if self._enter_train is not None:
            self._prev_train = set_training(self._enter_train)
        return self

    def __exit__(self, *exc):
        if self._enter_record is not None:
            set_recording(self._prev_record)
        if self._enter_train is not None:
            set_training(self._prev_train)
        return False


def record(train_mode: bool = True) -> _RecordingStateScope:
    """A scope in which NDArray operations are recorded for `backward` / `grad`.

    Args:
        train_mode: run ops in training mode inside the scope (MXNet's default, True).
    """
    return _RecordingStateScope(True, train_mode)


def pause(train_mode: bool = False) -> _RecordingStateScope:
    """A scope (inside `record`) in which operations are not recorded."""
    return _RecordingStateScope(False, train_mode)


def train_mode() -> _RecordingStateScope:
    """A scope in which ops run in training mode; recording is left as it is."""
    return _RecordingStateScope(None, True)


def predict_mode() -> _RecordingStateScope:
    """A scope in which ops run in inference mode; recording is left as it is."""
    return _RecordingStateScope(None, False)
