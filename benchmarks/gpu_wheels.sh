#!/usr/bin/env bash
# Wheels for a GPU machine whose image has torch, transformers, pandas and pyarrow but not
# DeepSpeed or pydantic (Python 3.12, x86-64): built or downloaded here into .whl/ (git-ignored),
# then installed there with
#   python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
#   export PYTHONPATH=$PWD:/tmp/site
# before bash benchmarks/gpu_bench.sh or benchmarks/gpu_smoke.sh. Versions: constraints/cpu.txt's.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .whl
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo /.whl/ >> "$(git rev-parse --git-common-dir)/info/exclude"
# DeepSpeed is an sdist: its pure-Python wheel, no CUDA ops prebuilt (they JIT-compile if used)
DS_BUILD_OPS=0 python -m pip wheel -q --no-deps --no-build-isolation -w .whl deepspeed==0.19.8
python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d .whl hjson==3.1.0 pydantic==2.13.4 pydantic-core==2.46.4 annotated-types==0.7.0 \
    typing-inspection==0.4.2 typing-extensions==4.16.0 liger-kernel==0.8.5 \
    psutil==7.2.2 einops==0.8.2 msgpack==1.2.4 py-cpuinfo==9.0.0
# (psutil, einops, msgpack: imported by `import deepspeed`; py-cpuinfo by its accelerator
# checks; typing-extensions: pydantic 2.13 needs >= 4.14, newer than torch requires)
ls -la .whl
