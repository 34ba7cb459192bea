#!/usr/bin/env bash
# transformers' continuous batching on one H100 or H200 (issue 38, item 4): a Qwen2.5-7B-shaped
# model (random weights, bf16) measured, then replayed, in one device call of at most 8 minutes.
#
#   bash bench/gpu_transformers.sh [--out DIR] [--python PY] [--wheels DIR] [--rates R1,R2]
#                                  [-n N] [--budget SECONDS] [--smoke] [--dry-run]
#
# Here: bash scripts/gpu_wheels.sh (into .whl); then one device call, from the repository's
# root, carrying .whl, with a 600 s limit: bash bench/gpu_transformers.sh. It needs a GPU
# (nvidia-smi lists one) and a Python (--python, default python3) with torch, transformers
# 5.17 or 5.23, numpy, scipy, attrs, aiohttp, typer, rich, matplotlib and psutil: the GPU
# image's. The wheels in --wheels DIR (default .whl: slidingpolicy, the
# adapter, immutables) are installed into a folder put first on PYTHONPATH (pip --no-index
# --no-deps --target), so that they run on the image's torch and transformers. Stops with one
# line naming what is missing otherwise. --smoke: the same steps on the CPU, on the tiny
# qwen2-tiny shape, with a grid of 8 cells and runs of 8 requests (about a minute).
# --dry-run: the plan (the commands, the grid, the time budget) and the wheels with their
# sizes; runs nothing.
#
# Everything is written in a work folder, packed at the end into DIR/gpu-transformers.tar.gz
# (split into 15 MiB parts if larger: a device call returns at most 8 files of 16 MiB), beside
# DIR/summary.md and DIR/summary.json (bench/gpu_summary.py: the figures the docs need) and
# DIR/run.log; DIR is --out, default $OUT, else results/gpu-transformers.
#
# (a) The grid: `python -m slidingpolicy_transformers grid` runs steps of exactly B decodes and
#     one c-token chunk, for c in {0, 64, 128, 136, 256, 264, 384, 512, 520, 1024, 2048}, B in
#     {0, 16, 64} and decode contexts L in {512, 2048}: 54 cells of 6 steps (the first 2 left
#     out), after the decoders' prefill; the pairs 8 tokens apart probe the tile steps of
#     docs/hardware.md. Its 128 decoders and one chunk request at a time hold about 12 GB of KV
#     cache (57,344 bytes a token in bf16) beside 15 GB of weights; its largest step attends
#     2,112 queries to about 150,000 cached tokens. Then `slidingpolicy fit --trace` fits the
#     engine's predictor to the trace (grid/predictor.json, grid/fit.txt) and `grid-report` sets
#     each cell beside the offline engine's h100 and h100-quantized models (grid/report.json,
#     grid/grid.csv: measured and modelled ms, relative errors, tile probes).
# (b) The replay: `slidingpolicy replay --launch transformers --shape qwen2.5-7b` under native
#     (the engine's FIFO, 512 tokens a step), sarathi-edf and slidingserve+ (their own budgets,
#     pricing with (a)'s predictor), three servers kept for the whole matrix (15.2 GB of weights
#     and 384 KV blocks of 256 tokens, 5.6 GB, each: 62 GB together, within an H100's 80). The
#     workload is cpu-mixed, not mixed-v1: its outputs are 16-96 tokens, so a run drains in
#     seconds, where mixed-v1's ~400-token outputs take 20-40 s a run at 50-100 ms a step, and
#     its SLOs (TTFT 1 s and 3 s, TBT 50 ms) are tight beside this engine's steps. The rates
#     are a guess: the offline engine's h100 model (qwen2.5-7b, TP1, 3 ms of overhead a step)
#     puts cpu-mixed's capacity at 103 req/s for sarathi-edf, 112 for vllm and 131 for
#     slidingserve+ (`slidingpolicy capacity --hardware h100 --tp 1 --workload cpu-mixed -n 2000
#     --seeds 1`), but this engine runs eager PyTorch from a Python loop and attends each step's
#     whole packed batch at once (paged|sdpa), so its steps are several times longer and its
#     knee far lower: 15 and 30 req/s (a seventh and a third of the model's), 300 requests a
#     run, one seed, one repeat: a first look to be corrected by (a)'s measurement (--rates).
#     Finite trials (--whole): a steady-state trial's 40 s of warm-up a run (40 chat TTFTs)
#     would take the six runs past the device call's minutes; a first look at the knee, whose
#     figures say they count every request (docs/engine.md, steady-state trials).
#
# Time (--budget 480 s; the device call's limit is 600): the wheels' install and the checks
# take seconds; the grid has 150 s from the start of the model's build (it stops there and
# keeps what ran; a hard stop 60 s later), its fit and report about 15 s; the replay gets what
# is left less 30 s for the summary and the archive: a hard stop then (SIGTERM: replay stops
# its servers and writes what ran), and, as its --time-limit, that less the longest a run can
# take (N / the lower rate + the 30 s request timeout + 15 s), so that no run starts that
# cannot end in time.
set -euo pipefail

die() {
    echo "gpu_transformers: $*" >&2
    exit 2
}

here=$(cd "$(dirname "$0")" && pwd)
invocation="bash $0 $*"
out="${OUT:-results/gpu-transformers}"
python="python3"
wheels=".whl"
wheels_given=0
rates=""
requests=""
budget=""
smoke=0
dry_run=0
while (($#)); do
    case "$1" in
    --out) out="${2:?--out needs a folder}"; shift 2 ;;
    --python) python="${2:?--python needs a path}"; shift 2 ;;
    --wheels) wheels="${2:?--wheels needs a folder}"; wheels_given=1; shift 2 ;;
    --rates) rates="${2:?--rates needs a list}"; shift 2 ;;
    -n | --requests) requests="${2:?-n needs a number}"; shift 2 ;;
    --budget) budget="${2:?--budget needs seconds}"; shift 2 ;;
    --smoke) smoke=1; shift ;;
    --dry-run) dry_run=1; shift ;;
    -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
    esac
done

if ((smoke)); then
    mode=smoke shape=qwen2-tiny device=cpu dtype=float32 num_blocks=64 timeout_s=10
    chunks=0,8,16 batches=0,2 contexts=16,32 steps=3 warmup=1 grid_budget=40
    : "${rates:=4,8}" "${requests:=8}" "${budget:=180}"
else
    mode=gpu shape=qwen2.5-7b device=cuda dtype=bfloat16 num_blocks=384 timeout_s=30
    chunks=0,64,128,136,256,264,384,512,520,1024,2048 batches=0,16,64 contexts=512,2048
    steps=6 warmup=2 grid_budget=150
    : "${rates:=15,30}" "${requests:=300}" "${budget:=480}"
fi
arms="native,sarathi-edf,slidingserve+"
after_grid=15
reserve=30
[[ "$requests" =~ ^[1-9][0-9]*$ ]] || die "-n $requests: expected a whole number > 0"
[[ "$budget" =~ ^[1-9][0-9]*$ ]] || die "--budget $budget: expected whole seconds > 0"
[[ "$rates" =~ ^[0-9]*\.?[0-9]+(,[0-9]*\.?[0-9]+)*$ ]] || die "--rates $rates: expected e.g. 15,30"
lowest=$(tr , '\n' <<<"$rates" | sort -g | head -1)
awk -v r="$lowest" 'BEGIN { exit !(r > 0) }' || die "--rates $rates: every rate must be > 0"
longest_run=$(awk -v n="$requests" -v r="$lowest" -v t="$timeout_s" \
    'BEGIN { s = n / r; printf "%d", (s == int(s) ? s : int(s) + 1) + t + 15 }')
replay_slot=$((budget - grid_budget - after_grid - reserve))
((replay_slot - longest_run >= 60)) ||
    die "--budget $budget: too short for the grid ($grid_budget s) and a run of $longest_run s"

# The grid's cells: each chunk c > 0 alone (when B = 0 is asked), then every (L, B > 0, c).
nonzero() {
    local n=0 v
    for v in "$@"; do
        ((v == 0)) || n=$((n + 1))
    done
    echo "$n"
}
read -r -a chunk_list <<<"${chunks//,/ }"
read -r -a batch_list <<<"${batches//,/ }"
read -r -a context_list <<<"${contexts//,/ }"
alone=$(($(nonzero "${batch_list[@]}") < ${#batch_list[@]} ? $(nonzero "${chunk_list[@]}") : 0))
cells=$((alone + $(nonzero "${batch_list[@]}") * ${#context_list[@]} * ${#chunk_list[@]}))

# phase NAME SECONDS [--to FILE] COMMAND...: run it (its output also into FILE), at most that
# long, its time and status into phases.tsv; in a dry run, print it.
work=""
phase() {
    local name=$1 limit=$2 status=ok started=$SECONDS to=/dev/null
    shift 2
    if [[ "$1" == --to ]]; then
        to=$2
        shift 2
    fi
    if ((dry_run)); then
        printf '%q ' "$@"
        [[ "$to" == /dev/null ]] && echo || echo "| tee $to"
        return 0
    fi
    echo "== $name (at most $limit s)"
    timeout --signal=TERM --kill-after=20 "$limit" "$@" | tee "$to" || status="failed ($?)"
    printf '%s\t%d\t%s\n' "$name" $((SECONDS - started)) "$status" >>"$work/phases.tsv"
    [[ "$status" == ok ]]
}

skip() {
    printf '%s\t0\tskipped: %s\n' "$1" "$2" >>"$work/phases.tsv"
    echo "== $1 skipped: $2"
}

# On exit from a run: the summary, the archive of the work folder, the log closed.
# shellcheck disable=SC2317  # called by the EXIT trap (shellcheck 0.9 misses it)
finish() {
    local code=$?
    trap - EXIT
    "$python" "$here/gpu_summary.py" "$work" --out "$out" || echo "the summary failed"
    cp "$out/summary.md" "$work/" 2>/dev/null || true
    tar -czf "$out/gpu-transformers.tar.gz" -C "$work" .
    if (($(stat -c %s "$out/gpu-transformers.tar.gz") > 15 * 1024 * 1024)); then
        split -b 15M -d "$out/gpu-transformers.tar.gz" "$out/gpu-transformers.tar.gz.part-"
        rm "$out/gpu-transformers.tar.gz"
    fi
    rm -rf "$work"
    echo "gpu_transformers: $SECONDS s; results in $out (summary.md, summary.json," \
        "run.log, gpu-transformers.tar.gz)"
    exec 1>&3 2>&4
    wait "$tee_pid" || true
    exit "$code"
}

if ((dry_run)); then
    work="WORK"
    echo "plan: $budget s in all; the grid $grid_budget s, its fit and report ~$after_grid s," \
        "the replay what is left less $reserve s (about $replay_slot s), runs starting until" \
        "$longest_run s before its end"
    echo "grid: $cells cells of $steps steps (the first $warmup left out): chunks $chunks," \
        "decodes $batches, contexts $contexts; $shape on $device in $dtype"
    echo "replay: $arms on cpu-mixed at $rates req/s, $requests requests a run"
    echo "commands, in WORK (packed into $out/gpu-transformers.tar.gz):"
else
    smi="${NVIDIA_SMI:-nvidia-smi}"
    if ((!smoke)); then
        "$smi" -L 2>/dev/null | grep -q "^GPU " ||
            die "no GPU: '$smi -L' lists none (--smoke runs the same steps on the CPU)"
    fi
    command -v "$python" >/dev/null || die "--python $python: not found"
    python=$(command -v "$python")
    if ((!smoke || wheels_given)); then
        found=("$wheels"/*.whl)
        if [[ -e "${found[0]}" ]]; then
            site=$(mktemp -d)
            "$python" -m pip install --quiet --no-index --no-deps --no-compile --target "$site" \
                "${found[@]}" >/dev/null 2>&1 || die "pip could not install the wheels of $wheels"
            export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
        fi
    fi
    # torch on one CPU thread, as replay runs its transformers servers, so that the grid
    # measures the engine they serve; the installed wheels, not the checkout, are imported
    export PYTHONSAFEPATH=1 HF_HUB_OFFLINE=1 OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
    modules=(torch transformers numpy scipy attrs aiohttp typer rich matplotlib psutil immutables
        slidingpolicy slidingpolicy_transformers)
    missing=$("$python" -c "import importlib.util as u, sys
print(' '.join(m for m in sys.argv[1:] if u.find_spec(m) is None))" "${modules[@]}")
    [[ -z "$missing" ]] || die "$python cannot import $missing (the wheels: bash" \
        "scripts/gpu_wheels.sh here, then carry $wheels)"
    guard=$("$python" -c "from slidingpolicy_transformers import check_transformers as c; c()" \
        2>&1 | tail -1) || die "$guard"
    if ((!smoke)); then
        "$python" -c "import sys, torch; sys.exit(not torch.cuda.is_available())" ||
            die "$python: torch sees no GPU"
    fi
    mkdir -p "$out"
    exec 3>&1 4>&2
    exec > >(tee "$out/run.log") 2>&1
    tee_pid=$!
    export COLUMNS=120
    work=$(mktemp -d)
    trap finish EXIT
    : >"$work/phases.tsv"
    "$python" -c 'import json, sys; json.dump(dict(a.split("=", 1) for a in sys.argv[2:]),
open(sys.argv[1], "w"), indent=2)' "$work/run.json" "mode=$mode" \
        "shape=$shape" "device=$device" "dtype=$dtype" "chunks=$chunks" "batches=$batches" \
        "contexts=$contexts" "steps=$steps" "warmup=$warmup" "grid_budget=$grid_budget" \
        "arms=$arms" "workload=cpu-mixed" "rates=$rates" "requests=$requests" \
        "budget=$budget" "num_blocks=$num_blocks" "python=$python" \
        "pythonpath=${PYTHONPATH:-}" "command=$invocation"
    if ((!smoke)); then
        "$smi" >"$work/nvidia-smi.txt" 2>&1 || true
    fi
fi

failed=0
grid="$work/grid"
phase model 60 "$python" -c 'import sys, pathlib; from slidingpolicy.replay.shapes import '\
'write_shape as w; w(sys.argv[1], pathlib.Path(sys.argv[2]))' "$shape" "$work/model" || failed=1
if phase grid $((grid_budget + 60)) "$python" -m slidingpolicy_transformers grid "$work/model" \
    --out "$grid" --chunks "$chunks" --batches "$batches" --contexts "$contexts" \
    --steps "$steps" --warmup "$warmup" --device "$device" --dtype "$dtype" \
    --budget "$grid_budget" --stall 60; then
    phase fit 60 --to "$grid/fit.txt" "$python" -m slidingpolicy.cli fit \
        --trace "$grid/grid-trace.jsonl" -o "$grid/predictor.json" || failed=1
    phase grid-report 60 --to "$grid/report.txt" \
        "$python" -m slidingpolicy_transformers grid-report "$grid" || failed=1
else
    failed=1
    skip fit "the grid failed"
    skip grid-report "the grid failed"
fi

slot=$((dry_run ? replay_slot : budget - SECONDS - reserve))
limit=$((slot - longest_run))
predictor=()
if ((dry_run)) || [[ -f "$grid/predictor.json" ]]; then
    predictor=(--predictor "$grid/predictor.json")
fi
if ((limit > 0)); then
    phase replay "$slot" "$python" -m slidingpolicy.cli replay --launch transformers \
        --transformers-python "$python" --shape "$shape" --policies "$arms" \
        --workload cpu-mixed --rates "$rates" -n "$requests" --seeds 1 --repeats 1 --whole \
        --timeout "$timeout_s" --time-limit "$limit" --warmup 2 \
        --start-timeout "$((limit < 180 ? limit : 180))" --server-arg="--device=$device" \
        --server-arg="--dtype=$dtype" --server-arg="--num-blocks=$num_blocks" "${predictor[@]}" \
        --trace-dir "$work/replay/traces" --out "$work/replay" || failed=1
else
    failed=1
    skip replay "$slot s left, less than a run's $longest_run s"
fi

if ((dry_run)); then
    echo "wheels carried ($wheels):"
    found=("$wheels"/*.whl)
    if [[ -e "${found[0]}" ]]; then
        bash "$here/../scripts/gpu_wheels.sh" --sizes "$wheels"
    else
        echo "  none yet: bash scripts/gpu_wheels.sh $wheels builds them (slidingpolicy," \
            "slidingpolicy-transformers, immutables for CPython 3.12)"
    fi
fi
exit "$failed"
