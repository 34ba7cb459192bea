#!/usr/bin/env bash
# Every policy arm on vLLM 0.33 on one GPU, a qwen2.5-7b-shaped model, and the offline engine
# held to it: ten minutes at most.
#
#   bash bench/gpu_real_engine.sh [--out DIR] [--python PY] [--rates R1,R2,R3] [-n N]
#                                 [--budget SECONDS] [--kv-gib G] [--dry-run]
#
# Needs a GPU (nvidia-smi lists one) and a Python (--python, default python3) holding vLLM
# 0.33, this repository (with its replay extra) and the adapter (slidingpolicy-vllm); stops
# with one line naming what is missing otherwise. --dry-run prints the commands instead.
#
# What it runs, under DIR (default $OUT, else results/gpu-real-engine):
#   1. a model folder holding only Qwen2.5-7B's config.json (dummy weights, no tokenizer);
#   2. `slidingpolicy replay --launch vllm` with every arm: vLLM's own scheduler (`native`)
#      and each registered policy through the adapter, on mixed-v1 at three rates around the
#      knee (10, 15, 20 req/s: the offline engine's h100 model puts sarathi-edf's capacity at
#      11.6 req/s, vllm's at 15.0 and slidingserve+'s at 19.4), N requests a run (80), one
#      seed, one repeat: a first look, not the matrix of docs/real-engine.md; finite trials
#      (--whole): a steady-state trial's 120 s of warm-up a run (40 ShareGPT TTFTs) would take
#      the runs past the device call's ten minutes (docs/engine.md, steady-state trials);
#   3. `slidingpolicy replay-fidelity` on all the runs, calibrated on sarathi-edf's step trace.
#
# Memory and time. Server starts dominate (one to two minutes each with dummy weights), so
# servers are kept for the whole matrix, not restarted per run. Ten 7B servers (~15 GB of
# weights each) do not fit on one GPU at once, so the arms run in two groups of five, one
# `replay` each, one group's servers stopped before the next group's start. Each server gets
# a fixed KV cache (--kv-cache-memory-bytes, --kv-gib GiB: 5 GiB: about 93,600 tokens of Qwen2.5-7B
# in bf16) rather than a share of free memory: vLLM sizes a share by profiling the device's
# free memory, and servers starting together on one GPU count each other's allocations as
# their own (vllm-project/vllm#55827); a fixed size needs no profile of free memory, and every
# arm gets the same cache, the size the fidelity table simulates (--gpu-memory-utilization 0.1
# is then only what vLLM asks to be free at start, 14 GB). Every arm's server gets
# --max-num-batched-tokens 8192 (vLLM's default for its server on an H100/H200), so the
# native arm's budget is known. Each group has half of what --budget (570 s) leaves after 45 s
# for the fidelity table: a hard stop then (SIGTERM: replay stops its servers and writes what
# ran), and 40 s less as replay's --time-limit (runs that would start later are skipped,
# highest rates first; a run started in time ends within 80/10 s + --timeout 30 s).
set -euo pipefail

die() {
    echo "gpu_real_engine: $*" >&2
    exit 2
}

out="${OUT:-results/gpu-real-engine}"
python="python3"
rates="10,15,20"
requests=80
budget=570
kv_gib=5
dry_run=0
while (($#)); do
    case "$1" in
    --out) out="${2:?--out needs a folder}"; shift 2 ;;
    --python) python="${2:?--python needs a path}"; shift 2 ;;
    --rates) rates="${2:?--rates needs a list}"; shift 2 ;;
    -n | --requests) requests="${2:?-n needs a number}"; shift 2 ;;
    --budget) budget="${2:?--budget needs seconds}"; shift 2 ;;
    --kv-gib) kv_gib="${2:?--kv-gib needs GiB}"; shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    -h | --help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
    esac
done
[[ "$requests" =~ ^[1-9][0-9]*$ ]] || die "-n $requests: expected a whole number > 0"
[[ "$budget" =~ ^[1-9][0-9]*$ ]] || die "--budget $budget: expected whole seconds > 0"
[[ "$kv_gib" =~ ^[1-9][0-9]*$ ]] || die "--kv-gib $kv_gib: expected whole GiB > 0"
[[ "$rates" =~ ^[0-9.]+(,[0-9.]+)*$ ]] || die "--rates $rates: expected e.g. 10,15,20"

if ((!dry_run)); then
    smi="${NVIDIA_SMI:-nvidia-smi}"
    "$smi" -L 2>/dev/null | grep -q "^GPU " || die "no GPU: '$smi -L' lists none"
    version=$("$python" -c "import vllm, slidingpolicy_vllm, slidingpolicy, aiohttp; \
print(vllm.__version__)" 2>/dev/null) ||
        die "$python cannot import vllm, slidingpolicy_vllm, slidingpolicy and aiohttp"
    [[ "$version" == 0.33* ]] || die "$python has vLLM $version; this script is for 0.33"
fi

arms=$("$python" -c "from slidingpolicy.policies import names; print(' '.join(names()))") ||
    die "$python cannot import slidingpolicy"
read -r -a all <<<"native $arms"
half=$(((${#all[@]} + 1) / 2))
groups=("$(IFS=,; echo "${all[*]:0:half}")" "$(IFS=,; echo "${all[*]:half}")")
slot=$(((budget - 45) / ${#groups[@]}))
limit=$((slot - 40))
((limit > 0)) || die "--budget $budget: too short for ${#groups[@]} groups"
model="$out/qwen2.5-7b"
calibration="$out/traces/sarathi-edf.jsonl"

run() {
    if ((dry_run)); then
        printf '%q ' "$@"
        echo
    else
        "$@"
    fi
}

run mkdir -p "$out"
run "$python" -c "from pathlib import Path; from slidingpolicy.replay.shapes import write_shape; \
write_shape('qwen2.5-7b', Path('$model'))"
folders=()
for i in "${!groups[@]}"; do
    folder="$out/group-$((i + 1))"
    folders+=("$folder")
    run timeout --signal=TERM --kill-after=20 "$slot" \
        "$python" -m slidingpolicy.cli replay --launch vllm --vllm-python "$python" \
        --model "$model" --policies "${groups[$i]}" --workload mixed-v1 --rates "$rates" \
        -n "$requests" --seeds 1 --repeats 1 --whole --timeout 30 --time-limit "$limit" \
        --start-timeout "$limit" --warmup 2 \
        --server-arg=--kv-cache-memory-bytes=$((kv_gib * 1024 * 1024 * 1024)) \
        --server-arg=--max-num-batched-tokens=8192 --server-arg=--gpu-memory-utilization=0.1 \
        --trace-dir "$out/traces" --out "$folder" ||
        echo "gpu_real_engine: group $((i + 1)) ended early; what ran is in $folder" >&2
done
run "$python" -m slidingpolicy.cli replay-fidelity "${folders[@]}" \
    --hardware-trace "$calibration" --out "$out/fidelity"
