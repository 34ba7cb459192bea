#!/usr/bin/env bash
# The wheels bench/gpu_transformers.sh carries to the GPU machine, whose image reaches no
# package index: slidingpolicy and slidingpolicy-transformers built from this checkout
# (without dependencies: the image has them), and immutables, the one core dependency the
# image lacks, as a CPython 3.12 manylinux x86_64 wheel (the image's python3 is 3.12.3).
#
#   bash scripts/gpu_wheels.sh [--python PY] [DIR]      # build into DIR (default .whl)
#   bash scripts/gpu_wheels.sh --sizes [DIR]            # list DIR's wheels and check the size
#
# Building empties DIR first and needs pip and the network (PyPI: immutables, and the build
# backend of the two packages). Both forms list each wheel's size and stop with one line
# when the wheels and the files of this checkout that travel with them (tracked and
# untracked, not ignored) pass the 64 MiB a device call carries.
set -euo pipefail

LIMIT=$((64 * 1024 * 1024))

die() {
    echo "gpu_wheels: $*" >&2
    exit 2
}

python="python3"
dir=".whl"
sizes_only=0
while (($#)); do
    case "$1" in
    --python) python="${2:?--python needs a path}"; shift 2 ;;
    --sizes) sizes_only=1; shift ;;
    -h | --help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown argument $1 (see --help)" ;;
    *) dir="$1"; shift ;;
    esac
done

# Bytes of the checkout's files that travel to the device machine (0 outside a git checkout).
tree_bytes() {
    git ls-files -z --cached --others --exclude-standard 2>/dev/null |
        xargs -0 --no-run-if-empty stat -c %s -- 2>/dev/null |
        awk '{ total += $1 } END { print total + 0 }'
}

mib() {
    awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'
}

sizes() {
    local wheels=("$dir"/*.whl) total=0 size wheel tree
    [[ -e "${wheels[0]}" ]] || die "no wheels in $dir: bash scripts/gpu_wheels.sh $dir builds them"
    for wheel in "${wheels[@]}"; do
        size=$(stat -c %s "$wheel")
        total=$((total + size))
        printf '  %-64s %6d KiB\n' "${wheel##*/}" $((size / 1024))
    done
    tree=$(tree_bytes)
    echo "  wheels $(mib "$total") + checkout $(mib "$tree") = $(mib $((total + tree))) of 64 MiB"
    ((total + tree <= LIMIT)) || die "$(mib $((total + tree))) would travel: more than 64 MiB"
}

if ((!sizes_only)); then
    rm -rf "$dir"
    mkdir -p "$dir"
    "$python" -m pip wheel --quiet --no-deps --wheel-dir "$dir" . adapters/transformers
    "$python" -m pip download --quiet --no-deps --only-binary=:all: --dest "$dir" \
        --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64 \
        --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 'immutables>=0.20'
fi
sizes
