"""LBSGD cases shared by make_lbsgd_golden.py (MXNet) and tests/test_lbsgd.py (jbind): optimizer keywords."""

COMMON = dict(learning_rate=0.1, wd=0.01, rescale_grad=0.5, momentum=0.9)
CASES = {
    "linear": dict(warmup_strategy="linear", batch_scale=2, warmup_epochs=1, updates_per_epoch=4),
    "power2": dict(warmup_strategy="power2", batch_scale=2, warmup_epochs=1, updates_per_epoch=4),
    "sqrt": dict(warmup_strategy="sqrt", batch_scale=3, warmup_epochs=2, updates_per_epoch=2, begin_epoch=1),
    "lars": dict(warmup_strategy="lars", batch_scale=2, warmup_epochs=1, updates_per_epoch=4),
    "nomom": dict(warmup_strategy="linear", batch_scale=2, warmup_epochs=1, updates_per_epoch=4, momentum=0.0),
}
