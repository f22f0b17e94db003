#!/usr/bin/env bash
# The checks that need a CUDA GPU, in one command, for a machine that has one.
#
#   bash benchmarks/cuda_checks.sh tests    # pytest -m cuda (every CUDA test)
#   bash benchmarks/cuda_checks.sh bench    # bench_giou on CUDA, synclint run on the seeds
#   BENCH_ARGS='--rounds 7' bash benchmarks/cuda_checks.sh bench   # fewer rounds (a short lease)
#
# Logs go to $OUT (or ./cuda-checks/ when OUT is unset). Wheels for packages the
# machine lacks may be put in .whl/ (they are installed into /tmp/site first).
set -uo pipefail
what=${1:-tests}
out=${OUT:-cuda-checks}; mkdir -p "$out"
export PYTHONUNBUFFERED=1
if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl || exit
    export PYTHONPATH=/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}
fi
nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv | tee "$out/gpu.txt"
python3 - <<'PY' | tee -a "$out/gpu.txt"
import sys, torch, libcst, synclint
print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda,
      "device", torch.cuda.get_device_name(), "capability", torch.cuda.get_device_capability(),
      "synclint", synclint.__version__)
PY
case "$what" in
tests)
    time python3 -m pytest -m cuda -q -p no:cacheprovider -rs \
        tests/test_ops_giou.py tests/test_runtime_cuda.py tests/test_runtime_truth_table.py 2>&1 \
        | tee "$out/pytest_cuda.log"
    ;;
bench)
    python3 benchmarks/bench_giou.py --device cuda --threads 0 --loop ${BENCH_ARGS:-} 2>&1 | tee "$out/bench_giou_cuda.log"
    for f in examples/seed_segmentation.py examples/seed_detection.py examples/fixed/*.py; do
        echo "== synclint run --device cuda $f"
        python3 -m synclint run --device cuda --report "$out/run_$(echo "${f%.py}" | tr / _).json" "$f" 2>&1 | tail -40
    done 2>&1 | tee "$out/run_cuda.log"
    ;;
esac
