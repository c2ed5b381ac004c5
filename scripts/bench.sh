#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# scripts/bench.sh: the performance benchmark (`make bench`). Measures the
# tool side by side with its baselines, on the same files and the same (warm)
# page cache, prints one table of ratios and (not in quick mode) writes it
# into docs/performance.md:
#
#   naive       the kernel's search (find_kallsyms_symbol(): every entry scans
#               every symbol), same parsing and planning code   bench/src/bin/zwm-naive.rs
#   read limit  touches exactly the bytes the tool must read     bench/src/bin/zwm-readlimit.rs
#   cat         cat FILE > /dev/null
#   xz -d       decompressing the tree (what packagers already pay for)
#
# Inputs: Debian sid amd64's modules (scripts/fetch-debian-kernel.sh),
# decompressed once into $ZWM_BENCH_DIR/tree with signatures cut off; the
# biggest modules one by one, the whole tree, and synthetic modules with
# 10^3..10^6 symbols and entries. Every tool run uses --check, so each run
# does the same work (nothing is written). Takes ~10 minutes on 2 cores.
#
# Environment:
#   ZWM_BENCH_DIR     scratch folder (default /tmp/zwm-bench); results go to
#                     $ZWM_BENCH_DIR/results/ (hyperfine JSON, logs, table.txt)
#   ZWM_BENCH_SUITE   Debian suite (default sid), ZWM_BENCH_ARCH (default amd64)
#   ZWM_BENCH_RUNS    hyperfine runs per command (default 20; tree: half)
#   ZWM_BENCH_QUICK=1 the short mode (`make bench-quick`, what CI runs, a few
#                     minutes once the tree is cached): amdgpu and kvm only,
#                     5 runs, one naive run, no xz, synthetic 10^3 and 10^4
#                     only, no profile; still the tool against the read limit
#   ZWM_BENCH_PROFILE=0  skip the callgrind profile
#   ZWM_BENCH_BUDGETS the instruction budgets (default bench/budgets): the run
#                     fails when a module's count is over its budget
#   ZWM_OFFLINE=1     passed to the fetch script: use the cached package lists
# Needs: hyperfine, /usr/bin/time (package time), xz, python3, cargo, valgrind.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
SCRATCH=${ZWM_BENCH_DIR:-/tmp/zwm-bench}
SUITE=${ZWM_BENCH_SUITE:-sid} DEBARCH=${ZWM_BENCH_ARCH:-amd64}
QUICK=${ZWM_BENCH_QUICK:-0}
RUNS=${ZWM_BENCH_RUNS:-20}
TREE_RUNS=$(( RUNS / 2 > 3 ? RUNS / 2 : 3 ))
BIG_MODULES=(amdgpu i915 xe xfs nouveau kvm)
SYNTH_SIZES=(1000 10000 100000 1000000)
NAIVE_RUNS=3
PROFILE=${ZWM_BENCH_PROFILE:-1}
if [ "$QUICK" = 1 ]; then
    RUNS=5 TREE_RUNS=3 NAIVE_RUNS=1 PROFILE=0
    BIG_MODULES=(amdgpu kvm) SYNTH_SIZES=(1000 10000)
fi
BATCH=64            # files per tool process in xargs mode

PROG=bench
. "$REPO/scripts/lib.sh"

for t in hyperfine /usr/bin/time xz python3 cargo find xargs valgrind; do
    command -v "$t" >/dev/null ||
        die "$t not found (apt-get -o DPkg::Lock::Timeout=600 install hyperfine time xz-utils python3 valgrind)"
done

RES=$SCRATCH/results SYN=$SCRATCH/synth
mkdir -p "$SCRATCH" "$RES" "$SYN"
rm -f "$RES"/*.json "$RES"/*.txt "$RES"/*.tsv

# --- build ------------------------------------------------------------------
log "building (cargo build --release, and bench/)"
TOOL=$(find_tool) || exit 1
# bench/ is a member of the workspace: its binaries land beside the tool.
(cd "$REPO" && cargo build --release --quiet -p zwm-bench)
BB=$(dirname "$TOOL")
NAIVE=$BB/zwm-naive READLIMIT=$BB/zwm-readlimit PHASES=$BB/zwm-phases

# --- inputs -----------------------------------------------------------------
ROOT=$("$REPO/scripts/fetch-debian-kernel.sh" "$SUITE" "$DEBARCH")
KVER=$(cat "$ROOT/../kver")
MODDIR=
for d in "$ROOT/usr/lib/modules/$KVER" "$ROOT/lib/modules/$KVER"; do
    [ -d "$d" ] && MODDIR=$d && break
done
[ -n "$MODDIR" ] || die "no module tree under $ROOT"
TREE=$SCRATCH/tree
STAMP="$KVER $(find "$MODDIR" -name '*.ko*' | wc -l)"
if [ "$(cat "$TREE/.stamp" 2>/dev/null)" != "$STAMP" ]; then
    log "decompressing $MODDIR into $TREE (signatures cut off)"
    rm -rf "$TREE" && mkdir -p "$TREE"
    (cd "$MODDIR" && find . -name '*.ko.xz' -print0 |
        xargs -0 -n 64 -P "$(nproc)" sh -c 'for f; do o="$0/${f%.xz}"; mkdir -p "${o%/*}"; xz -dc "$f" > "$o"; done' "$TREE")
    (cd "$MODDIR" && find . -name '*.ko' -exec cp --parents -t "$TREE" {} +)
    find "$TREE" -name '*.ko' -print0 | xargs -0 "$BB/zwm-unsign"
    echo "$STAMP" > "$TREE/.stamp"
fi
NMOD=$(find "$TREE" -name '*.ko' | wc -l)
log "$NMOD modules of $KVER in $TREE"
BIG=()
for m in "${BIG_MODULES[@]}"; do
    f=$(find "$TREE" -name "$m.ko" | sed -n 1p)
    [ -n "$f" ] && BIG+=("$f") || log "warning: no $m.ko in $KVER"
done
SMALL=$(find "$TREE" -name '*.ko' -printf '%s %p\n' | sort -n | sed -n 1p | cut -d' ' -f2-)
[ -s "$SYN/synth-100000.ko" ] || "$BB/zwm-synth" 100000 "$SYN/synth-100000.ko"

# --- 0. instructions, against the budgets -----------------------------------
# callgrind counts the same for the same build and file, whatever the load:
# a module over its budget ("-": none) fails the run, before any timing.
over=
while read -r name budget; do
    case $name in bundled) f=$REPO/testdata/zwm_test.ko ;; synth-*) f=$SYN/$name.ko ;;
        *) f=$(printf '%s\n' "${BIG[@]}" | grep "/$name\.ko$") || continue ;; esac
    n=$(valgrind --tool=callgrind --callgrind-out-file="$RES/callgrind.$name.out" "$TOOL" --check "$f" 2>&1 \
        >/dev/null | tee "$RES/callgrind.$name.log" | sed -n 's/.*Collected : //p' || true)
    printf '%s\t%s\t%s\n' "$name" "$n" "$budget" | tee -a "$RES/instructions.tsv" >&2
    [ "$budget" = - ] || [ "$n" -le "$budget" ] || over="$over $name"
done < <(grep -v '^#' "${ZWM_BENCH_BUDGETS:-$REPO/bench/budgets}")
[ -z "$over" ] || die "over the instruction budget (${ZWM_BENCH_BUDGETS:-bench/budgets}):$over"

# Warm the page cache for everything measured.
find "$TREE" -name '*.ko' -print0 | xargs -0 cat > /dev/null
find "$MODDIR" -name '*.ko.xz' -print0 | xargs -0 cat > /dev/null
HF=(hyperfine --style basic --ignore-failure)

# --- 1. the biggest modules, one by one -------------------------------------
for f in "${BIG[@]}"; do
    m=$(basename "$f" .ko)
    log "module $m: tool, read limit, cat"
    "$READLIMIT" -v "$f" | cut -f2,3 > "$RES/bytes.$m.txt"
    "${HF[@]}" -N --warmup 3 --runs "$RUNS" --export-json "$RES/mod.$m.json" \
        -n tool "$TOOL --check $f" \
        -n readlimit "$READLIMIT $f" \
        -n readlimit-text "$READLIMIT --text $f" \
        -n cat "cat $f" >&2
    log "module $m: naive ($NAIVE_RUNS runs)"
    "${HF[@]}" -N --warmup 0 --runs "$NAIVE_RUNS" --export-json "$RES/naive.$m.json" -n naive "$NAIVE $f" >&2
done

# --- 2. phases, in process --------------------------------------------------
log "phases (in process, median of 11 passes; naive capped at 5 s and extrapolated)"
"$PHASES" --reps 11 --naive-budget 5 "${BIG[@]}" > "$RES/phases.tsv"

# --- 3. peak RSS ------------------------------------------------------------
rss() {  # median of 3 max-RSS readings (KiB) of a command
    for _ in 1 2 3; do /usr/bin/time -f '%M' "$@" 2>&1 >/dev/null | tail -n1; done | sort -n | sed -n 2p
}
AMDGPU=$(printf '%s\n' "${BIG[@]}" | grep '/amdgpu\.ko$' || true)
if [ -n "$AMDGPU" ]; then
    log "peak RSS"
    {
        printf 'tool\t%s\n' "$(rss "$TOOL" --check "$AMDGPU")"
        printf 'tool-small\t%s\n' "$(rss "$TOOL" --check "$SMALL")"
        printf 'readlimit\t%s\n' "$(rss "$READLIMIT" "$AMDGPU")"
        printf 'readlimit-text\t%s\n' "$(rss "$READLIMIT" --text "$AMDGPU")"
        printf 'readlimit-small\t%s\n' "$(rss "$READLIMIT" "$SMALL")"
        printf 'cat\t%s\n' "$(rss cat "$AMDGPU")"
        printf 'small-file\t%s\n' "$SMALL"
    } > "$RES/rss.amdgpu.tsv"
fi

# --- 4. the whole tree ------------------------------------------------------
over_tree() {  # $1 = jobs, rest = command taking files
    local j=$1; shift
    echo "find $TREE -name '*.ko' -print0 | xargs -0 -n $BATCH -P $j $*"
}
log "tree: $NMOD modules, tool -j1/-j2 (its tree mode), read limit, cat"
"${HF[@]}" --warmup 2 --runs "$TREE_RUNS" --export-json "$RES/tree.json" \
    -n tool-j1 "$TOOL --check -j 1 $TREE" \
    -n tool-j2 "$TOOL --check -j 2 $TREE" \
    -n readlimit-j1 "$(over_tree 1 "$READLIMIT")" \
    -n cat-j1 "$(over_tree 1 cat)" \
    -n cat-j2 "$(over_tree 2 cat)" >&2
if [ "$QUICK" != 1 ]; then
    log "tree: xz -d of the .ko.xz files (the packager's step)"
    "${HF[@]}" --warmup 0 --runs 3 --export-json "$RES/tree-xz.json" \
        -n xz-d-j1 "find $MODDIR -name '*.ko.xz' -print0 | xargs -0 -n $BATCH -P 1 xz -dc" \
        -n xz-d-j2 "find $MODDIR -name '*.ko.xz' -print0 | xargs -0 -n $BATCH -P 2 xz -dc" >&2
fi
du -sb "$TREE" | cut -f1 > "$RES/tree-bytes.txt"
"$PHASES" --reps 5 --walk "$TREE" > "$RES/tree-walk.txt"   # the serial part of tree mode
find "$TREE" -name '*.ko' -print0 | xargs -0 "$READLIMIT" -v | awk '{b+=$2} END {print b}' > "$RES/tree-readbytes.txt"

# --- 5. synthetic scaling ---------------------------------------------------
SYNFILES=()
for n in "${SYNTH_SIZES[@]}"; do
    [ -s "$SYN/synth-$n.ko" ] || "$BB/zwm-synth" "$n" "$SYN/synth-$n.ko"
    SYNFILES+=("$SYN/synth-$n.ko")
done
log "synthetic scaling: ${SYNTH_SIZES[*]} (naive capped at 3 s and extrapolated)"
"$PHASES" --reps 5 --naive-budget 3 "${SYNFILES[@]}" > "$RES/synth-phases.tsv"
SYN_HF=()
for f in "${SYNFILES[@]}"; do SYN_HF+=(-n "$(basename "$f" .ko)" "$TOOL --check $f"); done
"${HF[@]}" -N --warmup 2 --runs 10 --export-json "$RES/synth-tool.json" "${SYN_HF[@]}" >&2

# --- 6. profile -------------------------------------------------------------
if [ "$PROFILE" = 1 ] && [ -n "$AMDGPU" ]; then
    log "callgrind on amdgpu.ko: the read limit (the tool's count is in section 0)"
    valgrind --tool=callgrind --callgrind-out-file="$RES/callgrind.readlimit.out" "$READLIMIT" "$AMDGPU" \
        >/dev/null 2>"$RES/callgrind.readlimit.log" || true
    callgrind_annotate --inclusive=yes "$RES/callgrind.amdgpu.out" 2>/dev/null |
        sed -E 's#/rustc/[0-9a-f]+/library/##; s#/root/.cargo/registry/src/[^/]+/##; s# \[[^]]*\]$##' |
        grep -E 'zero_weak_mcount::|ipnsort|memchr|PROGRAM TOTALS' | head -n 25 > "$RES/callgrind.tool.top.txt" || true
fi

# --- report -----------------------------------------------------------------
{
    echo "date: $(date -u +%Y-%m-%dT%H:%MZ)   kernel: $KVER ($SUITE $DEBARCH), $NMOD modules"
    echo "machine: $(nproc) CPUs, $(lscpu | sed -n 's/^Model name: *//p' | sed -n 1p), $(free -g | awk '/^Mem:/{print $2}') GiB RAM, load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "tool: $TOOL ($("$TOOL" --version 2>/dev/null || echo '?'); source $(git -C "$REPO" describe --always --dirty 2>/dev/null || echo '?'))"
    python3 "$REPO/bench/report.py" "$RES"
} | tee "$RES/table.txt"
[ "$QUICK" = 1 ] || python3 "$REPO/bench/report.py" --doc "$REPO/docs/performance.md" "$RES/table.txt"
