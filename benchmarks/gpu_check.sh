#!/usr/bin/env bash
# The GPU check: jbind on a machine with an NVIDIA GPU (CI has none). From the repo root:
#   OUT=/tmp/gpu benchmarks/gpu_check.sh
# 1. JAX, the GPU, and what precision a float32 matrix product gets there;
# 2. every check_op sample and golden test bound on gpu(0) (JBIND_TEST_DEVICE=gpu), then
#    the ones that failed again with JAX_DEFAULT_MATMUL_PRECISION=float32;
#    the float16 goldens again with XLA's excess precision off;
# 3. the whole suite with the GPU as JAX's default backend (contexts stay cpu(0)/cpu(1));
# 4. the bucketing example on gpu(0): 200 batches cold, again warm (persistent cache), one full epoch.
# Logs go to $OUT; each step has a time limit so that the rest still runs.
set -u
OUT=${OUT:-/tmp/gpu_check}
mkdir -p "$OUT"
PY=${PY:-python3}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
step() { echo; echo "=== $* ($(date +%T))"; }

step environment
nvidia-smi -L
$PY - <<'PY'
import jax, jax.numpy as jnp, numpy as np
print("jax", jax.__version__, jax.devices(), jax.devices("cpu"))
rng = np.random.default_rng(0)
a, b = rng.standard_normal((512, 512)).astype(np.float32), rng.standard_normal((512, 512)).astype(np.float32)
ref = a.astype(np.float64) @ b.astype(np.float64)
for prec in (None, "float32", "tensorfloat32"):
    with jax.default_matmul_precision(prec):
        got = np.asarray(jax.jit(jnp.dot)(jax.device_put(a, jax.devices()[0]), b))
    print(f"512x512 float32 dot on {jax.devices()[0].platform}, precision {prec}: "
          f"relative error {np.linalg.norm(got - ref) / np.linalg.norm(ref):.2e}")
PY

GOLDEN="tests/test_ops_*.py tests/test_rnn_fused.py tests/test_golden.py tests/test_zoo_golden.py tests/test_rnn_golden.py tests/test_e2e_mxnet.py"
step "check_op samples and golden tests on gpu(0)"
JBIND_TEST_DEVICE=gpu JAX_PLATFORMS=cuda,cpu timeout 200 $PY -m pytest -q -n 8 -o cache_dir=/tmp/pc -p no:benchmark \
  -W ignore::DeprecationWarning $GOLDEN >"$OUT/gpu_golden.log" 2>&1
echo "rc $?"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/gpu_golden.log" | tail -60
step "the failures again, with JAX_DEFAULT_MATMUL_PRECISION=float32"
JBIND_TEST_DEVICE=gpu JAX_PLATFORMS=cuda,cpu JAX_DEFAULT_MATMUL_PRECISION=float32 timeout 120 $PY -m pytest -q -n 8 \
  -o cache_dir=/tmp/pc -p no:benchmark --lf -W ignore::DeprecationWarning $GOLDEN >"$OUT/gpu_golden_f32.log" 2>&1
echo "rc $?"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/gpu_golden_f32.log" | tail -40

step "the float16 (AMP) goldens with XLA's excess precision off"
JBIND_TEST_DEVICE=gpu JAX_PLATFORMS=cuda,cpu XLA_FLAGS=--xla_allow_excess_precision=false timeout 100 $PY -m pytest \
  -q -p no:cacheprovider -p no:benchmark tests/test_zoo_golden.py -k amp >"$OUT/gpu_amp.log" 2>&1
echo "rc $?"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/gpu_amp.log" | tail -10

# (float32 products: the hand-written JAX baselines of test_bench and test_heads run on the
# default device, where JAX's own default would be TF32)
step "the whole suite, the GPU as JAX's default backend"
JAX_PLATFORMS=cuda,cpu JAX_DEFAULT_MATMUL_PRECISION=float32 timeout 200 $PY -m pytest -q -n 12 -p no:cacheprovider -p no:benchmark tests >"$OUT/suite_gpu_default.log" 2>&1
echo "rc $?"; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/suite_gpu_default.log" | tail -40

step "bucketing example on gpu(0), seed 2, 200 batches"
timeout 90 $PY examples/bucketing_rnn.py --gpus 0 --num-epochs 1 --seed 2 --max-batches 200 --disp-batches 50 \
  --cache-dir /tmp/jbind_cache >"$OUT/example_200.log" 2>&1
echo "rc $?"; tail -12 "$OUT/example_200.log"
step "the same, warm: the executables from the persistent cache"
timeout 90 $PY examples/bucketing_rnn.py --gpus 0 --num-epochs 1 --seed 2 --max-batches 200 --disp-batches 50 \
  --cache-dir /tmp/jbind_cache >"$OUT/example_200_warm.log" 2>&1
echo "rc $?"; tail -4 "$OUT/example_200_warm.log"
step "bucketing example on gpu(0), one full epoch"
timeout 90 $PY examples/bucketing_rnn.py --gpus 0 --num-epochs 1 --disp-batches 400 >"$OUT/example_epoch.log" 2>&1
echo "rc $?"; tail -12 "$OUT/example_epoch.log"
step done
