#!/usr/bin/env bash
# The GPU checks of issue 3, as one prepared script for a lent GPU machine (a few minutes on an
# H200). It runs in the repository root there, on the image's python3 and torch:
#
#   here:   bash benchmarks/gpu_wheels.sh                      # the wheels that image lacks -> .whl/
#   device: run(carry=[".whl"], timeout_s=600, command="bash benchmarks/gpu_checks.sh")
#
# 1. benchmarks/train_throughput.py for resnet20 and resnet9 at G = 1, 8, 32, 64 (batch 128, the
#    paper preset's), bf16 autocast and channels_last as the engine does on CUDA;
# 2. benchmarks/measure_cost.py: the cost per step of the measured clocks, on vs off, same run;
# 3. `initmem collect` of a small digits grid on CUDA, end to end (packing, bf16, the cube);
# 4. `initmem inspect` of that cube.
# Logs go to $OUT (the device tool brings them back) or /tmp/initmem-gpu. For a CPU dry run of
# the script's logic: DEVICE=cpu PYTHON=.venv/bin/python WHEELS=none GPU_SECONDS=0.5 GPU_G=1,2 GPU_BATCH=8 \
#   bash benchmarks/gpu_checks.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/initmem-gpu}
DEVICE=${DEVICE:-cuda}
PY=${PYTHON:-python3}
SECONDS_PER_G=${GPU_SECONDS:-5}
PACKS=${GPU_G:-1,8,32,64}
BATCH=${GPU_BATCH:-128}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
# Scratch files in a private folder: two dry runs on one machine must not share them.
WORK=$(mktemp -d /tmp/initmem-gpu-work.XXXXXX)

WHEELS=${WHEELS:-.whl}
if [ -d "$WHEELS" ] && ls "$WHEELS"/*.whl >/dev/null 2>&1; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$WORK/site" \
        "$WHEELS"/*.whl || { echo "wheel install failed" | tee "$OUT/error.txt"; exit 2; }
    export PYTHONPATH=$WORK/site${PYTHONPATH:+:$PYTHONPATH}
fi
# The repository root is the package `initmem` (package-dir mapping): expose it without installing.
mkdir -p "$WORK/pkgs" && ln -sfn "$PWD" "$WORK/pkgs/initmem"
export PYTHONPATH=$WORK/pkgs${PYTHONPATH:+:$PYTHONPATH}

{
    date -u
    command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
    "$PY" -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__,
'cuda', torch.cuda.is_available() and torch.cuda.get_device_name(0))"
} 2>&1 | tee "$OUT/machine.txt"

status=0
for arch in resnet20 resnet9; do
    echo "== train_throughput $arch" | tee "$OUT/throughput_$arch.txt"
    timeout 200 "$PY" benchmarks/train_throughput.py --device "$DEVICE" --arch "$arch" --G "$PACKS" \
        --batch-size "$BATCH" --seconds "$SECONDS_PER_G" 2>&1 | tee -a "$OUT/throughput_$arch.txt" || status=1
done

echo "== measure_cost" | tee "$OUT/measure_cost.txt"
timeout 150 "$PY" benchmarks/measure_cost.py --device "$DEVICE" --G "$PACKS" --rounds 3 2>&1 \
    | tee -a "$OUT/measure_cost.txt" || status=1

cat > "$WORK/grid.yaml" <<'EOF'
name: gpu_smoke
dataset: {name: digits}
model: {arch: resnet_tiny, width: 16}
sigma_w: [0.25, 1, 4]
seeds: [0, 1, 2]
pipelines:
  sgd:  {optimizer: sgd,  lr: 0.05,  batch_size: 32,  epochs: 3}
  adam: {optimizer: adam, lr: 0.002, batch_size: 64,  epochs: 3}
EOF
echo "== initmem collect on $DEVICE" | tee "$OUT/collect.txt"
timeout 150 "$PY" -m initmem.cli collect "$WORK/grid.yaml" --out "$WORK/run" \
    --device "$DEVICE" 2>&1 | tee -a "$OUT/collect.txt" || status=1
"$PY" -m initmem.cli inspect "$WORK/run/cube.nc" 2>&1 | tee -a "$OUT/collect.txt" || status=1
echo "gpu_checks exit status $status" | tee -a "$OUT/machine.txt"
rm -rf "$WORK"
exit $status
