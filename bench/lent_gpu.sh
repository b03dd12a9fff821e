#!/usr/bin/env bash
# The GPU figures (fine-tuning MFU, unpadded pretraining MFU at 128 and 512 tokens, the whole-BLURB
# projection, and where a fine-tuning step's time goes: bench.step_profile) in one run on a bare
# GPU machine: its python3 has torch and transformers but none of
# this project's other packages, its data or its models, and nothing can be downloaded there.
#
#   bash bench/lent_gpu.sh CARRY OUT
#
# CARRY is a folder made on a machine with the project installed (docs/performance.md says how):
#   whl/            datasets, dill and multiprocess wheels for the machine's Python (whl-fallback/: older ones)
#   whl-test/       pytest and its two dependencies, for the tests that only a GPU runs
#   data.tar.xz     the official BLURB files (each <Dataset>/blurb folder of BIOLM_DATA_DIR)
#   minilm/         MiniLM-L6's tokenizer files (BERT's uncased vocabulary), without its weights
#   pairs.tar.xz    the pretraining benchmark's sentence pairs at 128 and 512 tokens (pairs_dir)
# Each benchmark writes OUT/<name>.json (and all of them OUT/run.log); one that fails or runs out of
# its time leaves the others', and pretraining and BLURB keep what they finished in OUT/<name>.partial.json
# (step_profile in its own JSON). On an H200 the whole run takes at most 9 minutes 30 (each step's limit is
# below: TESTS_S, FINETUNE_S, PRETRAIN_S, BLURB_S and PROFILE_S, 540 s in all), inside a 10-minute call.
# Pretraining runs three arms (padded, unpadded with the block-diagonal mask, and varlen: FlashAttention's
# varlen kernels with no mask) for PRETRAIN_STEPS steps at each block size, each profiling its last 3 steps
# by kind of work (bench/kernel_profile.py).
set -u
carry=$(realpath "${1:?CARRY folder}")
out=$(mkdir -p "${2:?OUT folder}" && realpath "$2")
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
site=/tmp/lent-gpu-site
install() { rm -rf "$site" && python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" "$1"/*.whl; }
install "$carry/whl"
tests_site=/tmp/lent-gpu-tests
rm -rf "$tests_site" && python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
    --target "$tests_site" "$carry/whl-test"/*.whl
export PYTHONPATH="$site:$PWD/platform:$PWD:$tests_site"
if ! python3 -c "import datasets" 2>/tmp/lent-gpu-datasets.txt; then
    echo "datasets does not import with the carried version; trying the fallback:"; tail -2 /tmp/lent-gpu-datasets.txt
    install "$carry/whl-fallback"
fi
data=/tmp/lent-gpu-data pairs=/tmp/lent-gpu-pairs
mkdir -p "$data" "$pairs"
tar -xJf "$carry/data.tar.xz" -C "$data" && tar -xJf "$carry/pairs.tar.xz" -C "$pairs"
export BIOLM_DATA_DIR="$data" BIOLM_BENCH_MINILM="$carry/minilm"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.used,memory.total --format=csv
python3 -c "import sys, torch, transformers, tokenizers, datasets, pyarrow; print(sys.version.split()[0], torch.__version__, transformers.__version__, tokenizers.__version__, datasets.__version__, pyarrow.__version__)"

# STEPS names the steps to run, in the script's order. The default is the five below; pretrain_compiled (the packed
# arms under torch.compile, the lever for elementwise work) is left out because its compilation does not fit the
# same 10-minute call. A second call while the machine is still warm runs it:
#   STEPS=pretrain_compiled bash bench/lent_gpu.sh CARRY OUT2      (or any step again, for one that failed)
steps=" ${STEPS:-cuda_tests finetune_gpu pretrain_unpadded blurb_gpu step_profile} "

step() {  # NAME SECONDS COMMAND...: one figure, bounded in time, its output kept
    local name=$1 limit=$2
    shift 2
    if [[ "$steps" != *" $name "* ]]; then
        echo "== $name: not in STEPS =="
        return
    fi
    echo "== $name (at most $limit s) =="
    local start=$SECONDS
    timeout --kill-after=10 "$limit" "$@" 2>&1 | tee -a "$out/run.log" | grep -v "^\s*$" | tail -40
    echo "== $name: exit ${PIPESTATUS[0]} after $((SECONDS - start)) s =="
}

# The CUDA-only tests first: graphed steps and the varlen kernels must train what the eager and masked
# paths train before their speed means anything. No conftest (it needs the platform's Django stack, absent here).
step cuda_tests "${TESTS_S:-60}" python3 -m pytest tests/test_engine_cuda_graphs.py tests/test_engine_varlen_attention.py \
    -q -p no:cacheprovider \
    --noconftest -W ignore::pytest.PytestConfigWarning --junitxml="$out/cuda_tests.xml"
step finetune_gpu "${FINETUNE_S:-100}" python3 - "$out" <<'EOF'
import sys
from pathlib import Path
from bench import common, finetune_throughput
common.quiet()
figure = finetune_throughput.gpu_mfu(finetune_throughput.Config())
figure.update(machine=common.machine(), versions=common.versions())
common.write_json("finetune_gpu", figure, Path(sys.argv[1]))
if not figure["measured"]:
    sys.exit(f"finetune_gpu: {figure['reason']}")
for batch, f in figure["batch_sizes"].items():
    for path, g in (("eager", f), ("cuda_graphs", f.get("cuda_graphs"))):
        if g:
            print(f"batch {batch} {path}: {g['tokens_per_second']:,.0f} real tokens/s, {g['steps_per_second']:.1f} steps/s, MFU {100 * g['mfu']:.1f}%, {g['replayed_steps']} of {g['steps']} steps replayed")
print(f"MFU at the protocol's batch: {100 * figure['mfu']:.1f}% ({figure['mfu_path']}; goal {100 * figure['goal']:.0f}%)")
EOF
step pretrain_unpadded "${PRETRAIN_S:-210}" python3 -m bench pretrain_unpadded --out "$out" \
    --set pairs_dir="$pairs" --set steps="${PRETRAIN_STEPS:-150}"
# The packed arms compiled, varlen first, with 10 warm-up steps for the compilations. The padded baseline is
# pretrain_unpadded's (eager, measured by the default steps); this JSON goes to OUT/compiled/, beside that one.
step pretrain_compiled "${COMPILED_S:-300}" python3 -m bench pretrain_unpadded --out "$out/compiled" \
    --set pairs_dir="$pairs" --set steps="${PRETRAIN_STEPS:-150}" --set compile=true --set warm_steps=10 \
    --set arms=varlen,unpadded
# BLURB with graphed fine-tuning steps, as a GPU worker started with BIOLM_CUDA_GRAPHS=1 runs it
# (docs/measurements/h200-2026-11-28/ holds the eager path's figures).
BIOLM_CUDA_GRAPHS=${BLURB_GRAPHS:-1} step blurb_gpu "${BLURB_S:-130}" python3 -m bench blurb_gpu --out "$out" \
    --set max_train_examples="${BLURB_TRAIN:-1000}" --set max_eval_examples="${BLURB_EVAL:-1000}" \
    --set budget_seconds="${BLURB_BUDGET:-100}"
# Processes side by side were measured on 2026-11-28 (1, 4, 8: 19.8, 88.4, 101.8 steps/s): not again, so the
# step's split by kind of work and its graph fit in the limit (each side-by-side round starts fresh interpreters).
step step_profile "${PROFILE_S:-40}" python3 -m bench.step_profile --out "$out" --processes "${PROFILE_PROCESSES:-}"
ls -la "$out"
nvidia-smi --query-gpu=clocks.sm,memory.used --format=csv
