#!/usr/bin/env bash
# Download, on this (CPU) machine, the wheels that benchmarks/gpu_checks.sh needs on the lent GPU
# machine and that its image lacks: pydantic (the grid parser) and netCDF4 (the cube). The GPU
# image has torch, numpy, xarray, scikit-learn, click, rich, jinja2 and pyyaml already.
#
#   bash benchmarks/gpu_wheels.sh            # -> .whl/ (git-ignored through .git/info/exclude)
#
# Then one device call: carry [".whl"], command "bash benchmarks/gpu_checks.sh".
set -euo pipefail
cd "$(dirname "$0")/.."
PYVER=${PYVER:-3.12}   # the GPU image's python3
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
rm -rf .whl && mkdir -p .whl
python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$PYVER" --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d .whl \
    pydantic==2.14.4 pydantic_core==2.50.5 annotated_types==0.8.0 typing_inspection==0.4.5 \
    netCDF4==1.7.5.1.post1 cftime==1.6.6.1
ls -la .whl
du -sh .whl
