#!/usr/bin/env bash
# The GPU figures of docs/benchmarks.md in one run: the CUDA tests, the DP engine against SGD and opacus, embedding
# throughput, the Figure 4 grid and a torchrun embed with two ranks. Each part logs to LOGDIR/<part>.log and
# appends its tail to LOGDIR/summary.log. Parts: tests train embed figure4 torchrun (default: all, in that order).
# Usage: bash benchmarks/gpu.sh LOGDIR [PART...]   (EMBED_SIDES="96 224": the source image sides embed measures)
set -uo pipefail
cd "$(dirname "$0")/.."
logs=${1:?usage: bash benchmarks/gpu.sh LOGDIR [PART...]}
shift
parts=${*:-tests train embed figure4 torchrun}
mkdir -p "$logs"
export PYTHONUNBUFFERED=1 PILLAR_CACHE_DIR=${PILLAR_CACHE_DIR:-$(mktemp -d)} PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
python=${PYTHON:-python3}

part() {  # part NAME COMMAND...: run, log, time, and keep the tail in the summary
    local name=$1 start=$SECONDS status
    shift
    echo "== $name: $*" | tee -a "$logs/summary.log"
    "$@" >>"$logs/$name.log" 2>&1
    status=$?
    echo "== $name: exit $status after $((SECONDS - start)) s" | tee -a "$logs/$name.log" >>"$logs/summary.log"
    tail -n 30 "$logs/$name.log" | grep -v '^== ' >>"$logs/summary.log"
    return $status
}

tests() {
    part tests "$python" -m pytest -q -p no:cacheprovider tests/gpu tests/unit/linear tests/cli/test_embed_shards.py \
        tests/cli/test_embed_resume.py
}

train() {
    part train "$python" benchmarks/bench_train.py --device cuda --profile &&
        part train "$python" benchmarks/bench_train.py --device cuda --steps 500
}

embed() {
    for side in ${EMBED_SIDES:-32 96 224}; do
        part embed "$python" benchmarks/bench_embed.py --model resnet50 --images 16384 --naive-images 2048 \
            --side "$side" --size 256 --crop 224 --batch 256 --workers 8 || return
    done
}

figure4() {
    part figure4 "$python" benchmarks/bench_figure4.py --device cuda
}

torchrun() {  # one process vs two ranks sharing the GPU: MNIST-5k through ResNet-50 at 224 px
    local args=(embed --source mnist5k --backbone resnet50 --no-pretrained --resize 256 --crop 224
                --batch-size 256 --workers 4)
    local work
    work=$(mktemp -d)
    part torchrun "$python" -m pillar_cli "${args[@]}" -o "$work/single.h5"
    part torchrun "$python" -m torch.distributed.run --standalone --nproc_per_node 2 -m pillar_cli "${args[@]}" \
        -o "$work/ranks.h5"
    part torchrun "$python" -c "
import numpy as np, sys
from pillar_cli import artifacts
a, b = (artifacts.read(f'$work/{n}.h5', 'embeddings') for n in ('single', 'ranks'))
for name in sorted(a.arrays):
    x, y = a.arrays[name], b.arrays[name]
    print(name, x.shape, 'max |diff|', float(np.abs(x.astype(float) - y.astype(float)).max()))
"
}

nvidia-smi >>"$logs/summary.log" 2>&1
"$python" -c "import torch, timm; print('torch', torch.__version__, 'timm', timm.__version__)" >>"$logs/summary.log" 2>&1
for name in $parts; do
    "$name" || { echo "== stopped: $name failed" | tee -a "$logs/summary.log"; exit 1; }
done
