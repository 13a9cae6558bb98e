#!/usr/bin/env bash
# The GPU checks: run this on your own CUDA machine, from a checkout of initmem (a few minutes on a
# recent data-centre GPU). It needs python3 with torch (CUDA build) and initmem's dependencies; initmem
# itself need not be installed: the checkout is put on the path as the package `initmem`.
#
#   bash benchmarks/gpu_checks.sh
#
# What it measures:
# 1. benchmarks/train_throughput.py for resnet20 and resnet9 at G = 1, 8, 32, 64 (batch 128, the
#    paper preset's), bf16 autocast and channels_last as the engine does on CUDA;
# 2. benchmarks/measure_cost.py: the cost per step of the measured clocks, on vs off, same run;
# 3. `initmem collect` of a small digits grid on CUDA, end to end (packing, bf16, the cube);
# 4. `initmem inspect` of that cube.
# Each stage has a time limit, so the whole takes at most about ten minutes. The logs go to $OUT
# (default /tmp/initmem-gpu): machine.txt, throughput_resnet20.txt, throughput_resnet9.txt,
# measure_cost.txt, collect.txt. The exit status is 0 when every stage succeeded.
#
# Settings (environment variables):
#   OUT=DIR          where the logs go
#   PYTHON=python3   the interpreter
#   DEVICE=cuda      the torch device
#   GPU_G=1,8,32,64  the pack sizes; GPU_BATCH=128 the batch size; GPU_SECONDS=5 the seconds per pack size
#   WHEELS=DIR       a folder of wheels to install into a private folder first, for a machine without
#                    network access that lacks some of initmem's dependencies (pydantic, netCDF4, ...)
# A quick dry run of the script's logic on a CPU:
#   DEVICE=cpu PYTHON=.venv/bin/python GPU_SECONDS=0.5 GPU_G=1,2 GPU_BATCH=8 bash benchmarks/gpu_checks.sh
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
# Scratch files in a private folder: two runs on one machine must not share them.
WORK=$(mktemp -d /tmp/initmem-gpu-work.XXXXXX)

WHEELS=${WHEELS:-}
if [ -n "$WHEELS" ]; then
    ls "$WHEELS"/*.whl >/dev/null 2>&1 || { echo "no wheels in $WHEELS" | tee "$OUT/error.txt"; exit 2; }
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
