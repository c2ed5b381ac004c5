#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# kernel-e2e.sh — prove the kernel half (kernel/*.patch) in real kernels.
#
#   scripts/kernel-e2e.sh [--arch ARCH (a row of ROWS)] [--release 7.2|7.3] [--suite SUITE]
#                         [--quick] [--build-only] [--work DIR] [--rounds N] [--loads N]
#
# --quick (what .ci/run can always afford, about a minute): the series
#   applies with `git apply` (no fuzz) to the files it touches in Debian's
#   linux-source-7.2 and in experimental's linux-source-7.3 (7.3~rc7, where
#   include/linux/module.h has moved by 4 lines).
#
# Full run, for one arch (a row of ROWS below):
#   1. build the row's kernels from that source with its config
#      (scripts/kernel-e2e/config*.sh), each cold but a "+series" one (the
#      series' kernel diffs on the stock tree, incrementally); aarch64 stops
#      there (KVM is built in).  The series changes no config option and no
#      module: built cold, the two .config files must be identical;
#   2. collect kvm.ko (and what it needs first) from one build in the four
#      forms docs/kernel-e2e.md names (unchecked, processed, debug-stripped,
#      stripped); and build the negative control, the series kernel with
#      its pass broken (kernel-bench/floor.patch: every location kept);
#   3. boot under QEMU/TCG with one vCPU (scripts/guest/run.sh, payload
#      loads.sh), --rounds times, each kernel in turn, loading and unloading
#      every form --loads times per boot; then the broken kernel once with
#      unchecked kvm.ko, which must show the dead records;
#   4. scripts/kernel-e2e/report.py judges the boots (see its docstring)
#      and writes the table to WORK/report.md.
#
# --release 7.3 builds from experimental's linux-source-7.3 instead of
# 7.2 (lib.sh's SOURCES), the series kernel alone, so the reference is the
# broken kernel, as on ppc64le.  --suite SUITE takes the release's
# linux-source from that Debian suite instead (scripts/fetch-debian-kernel.sh
# names them): `--release 7.3 --suite trixie-backports` builds 7.3.4, the
# 7.3 that trixie users get, rather than experimental's 7.3~rc7.
#
# --build-only stops after step 2 (scripts/kernel-bench.sh and
# scripts/kernel-selftests.sh build on it).
#
# Defaults: --arch x86_64, --rounds and --loads from the row (x86_64: 4 and
# 10, 40 timed loads per case; ppc64le 6 and 5, the 30 its load times
# need; the others 1 and 5), WORK
# ${ZWM_CACHE:-~/.cache/zero-weak-mcount}/kernel-e2e[-ARCH][-REL][-SUITE]
# (but for x86_64, 7.2 and no --suite).  Builds are incremental.
# Environment: ZWM_JOBS (make -j, default nproc+1), ZWM_NICE (added to the
# niceness the script runs at, as `nice -n` adds, up to 19; default 0: the
# builds keep the caller's niceness, so under an outer `nice` leave it
# unset), ZWM (the tool; default a fresh cargo build --release), ZWM_SERIES
# (the folder of the series' NNNN-*.patch files, default kernel/),
# ZWM_BUILD_LOCK (a lock file every make of a kernel tree holds).
#
# Host needs: lib.sh's KBUILD_NEEDS, git cpio python3, the row's QEMU and
# cross compiler; apt-get installs what is missing when run as root.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HERE=$REPO/scripts/kernel-e2e
PROG=kernel-e2e DIE_STATUS=2
. "$REPO/scripts/lib.sh"

# The arches: kernel ARCH, cross prefix, config script, the kernels built,
# the kvm.ko path, the modules kvm.ko needs first, the default rounds and
# loads, the boot timeout, and the packages of the compiler and QEMU.
# s390x builds, but its kvm.ko needs SIE, which TCG lacks: insmod fails.
ROWS="
x86_64  x86_64  -                       config.sh          stock,series  arch/x86/kvm/kvm.ko      virt/lib/irqbypass.ko  4 10  900   gcc                          qemu-system-x86
ppc64le powerpc powerpc64le-linux-gnu-  config-ppc64le.sh  stock,+series arch/powerpc/kvm/kvm.ko  -                      6 5   1800  gcc-powerpc64le-linux-gnu    qemu-system-ppc
aarch64 arm64   aarch64-linux-gnu-      config.sh          stock,series  -                        -                      1 1   600   gcc-aarch64-linux-gnu        qemu-system-arm
riscv64 riscv   riscv64-linux-gnu-      config.sh          stock,+series arch/riscv/kvm/kvm.ko    -                      1 5   1800  gcc-riscv64-linux-gnu        qemu-system-misc
s390x   s390    s390x-linux-gnu-        config.sh          stock,+series arch/s390/kvm/kvm.ko     -                      1 5   1800  gcc-s390x-linux-gnu          qemu-system-misc
"
arch=x86_64 release=7.2 suite='' quick=0 build_only=0 rounds='' loads='' work=''
while [ $# -gt 0 ]; do
    case "$1" in
        --arch) arch=$2; shift 2;;
        --release) release=$2; shift 2;;
        --suite) suite=$2; shift 2;;
        --quick) quick=1; shift;;
        --build-only) build_only=1; shift;;
        --work) work=$2; shift 2;;
        --rounds) rounds=$2; shift 2;;
        --loads) loads=$2; shift 2;;
        *) arg_error "$1";;
    esac
done
row=$(awk -v a="$arch" '$1 == a' <<<"$ROWS")
[ -n "$row" ] || die "unknown arch $arch ($(awk 'NF {printf "%s ", $1}' <<<"$ROWS"))"
read -r _ karch cross config kernels kvm_path dep def_rounds def_loads boot_timeout cc_pkg qemu_pkg <<<"$row"
[ "$cross" != - ] || cross=
kernels=${kernels//,/ }
# On a release other than 7.2 the series alone: what is asked there is that
# it builds and boots and does its job, judged against its broken control.
[ "$release" = 7.2 ] || kernels=series
rounds=${rounds:-$def_rounds} loads=${loads:-$def_loads}
cache=${ZWM_CACHE:-$HOME/.cache/zero-weak-mcount}
if [ -z "$work" ]; then
    work=$cache/kernel-e2e
    [ "$arch" = x86_64 ] || work=$work-$arch
    [ "$release" = 7.2 ] || work=$work-$release
    [ -z "$suite" ] || work=$work-$suite
fi
mkdir -p "$work"
work=$(cd "$work" && pwd)
mk=(ARCH="$karch" ${cross:+CROSS_COMPILE=$cross})

# --- host tools --------------------------------------------------------------------
# command-or-file  package
needs=("git git" "python3 python3" "xz xz-utils")
[ $quick = 1 ] || needs+=("${KBUILD_NEEDS[@]}" "${cross}gcc $cc_pkg" "cpio cpio" "modinfo kmod"
    "$(awk -v a="$arch" '$1 == a {print $2}' "$GUEST/arches.tsv") $qemu_pkg" "/bin/busybox busybox-static"
    "/usr/lib/python3/dist-packages/elftools python3-pyelftools")
missing_packages "${needs[@]}"
install_packages "${MISSING[@]}"
[ $quick = 1 ] || need_elftools

# --- the source ------------------------------------------------------------------
# --suite: the release's source from that suite (lib.sh's SOURCES maps a
# release to its default suite); the other releases keep theirs.
[ -z "$suite" ] || SOURCES=$(awk -v r="$release" 'NF && $1 != r' <<<"$SOURCES"; echo "$release $suite")
series_source "$release"
# The files the series touches, from its diff headers; new files excluded.
mapfile -t touched < <(sed -n 's|^--- a/||p' "${PATCHES[@]}" | sort -u)
apply_check() { # TARBALL: the series applies to its tree with git apply
    local tarball=$1 name t
    name=$(basename "$tarball" .tar.xz)
    log "series: checking that ${#PATCHES[@]} patches apply to $name (${#touched[@]} files)"
    t=$work/apply-check
    rm -rf "$t"; mkdir -p "$t"
    tar -xJf "$tarball" -C "$t" --strip-components=1 "${touched[@]/#/$name/}"
    (cd "$t" && git apply --verbose "${PATCHES[@]}" 2>&1 | sed 's/^/  /' >&2) ||
        die "the series does not apply cleanly to Debian's $name"
    log "series: applies cleanly to $name"
}
# On every release of lib.sh's SOURCES, the one built from last.
for r in $(awk -v r="$release" 'NF && $1 != r {print $1}' <<<"$SOURCES") "$release"; do
    series_source "$r"
    apply_check "$TARBALL"
done
if [ $quick = 1 ]; then
    echo "kernel-e2e: quick: PASS"
    exit 0
fi

ZWM=$(find_tool "${ZWM:-}") || exit 2

# --- the kernels -------------------------------------------------------------------
declare -A build_secs
image=$("$GUEST/run.sh" --image "$arch")
# A variant (below) patches a tree's files for a while and keeps their
# originals in WORK/orig-TREE; an interrupted run leaves them there, and
# they go back (copied: newer than any object) before the tree is built.
unpatch() { # TREE
    local o=$work/orig-$1
    [ -d "$o" ] || return 0
    cp -r "$o"/. "$work/src-$1"/
    rm -rf "$o"
}
build() { # NAME
    local name=$1 src=$work/src-$1 obj=$work/obj-$1
    unpack_tree "$src" "$([ "$name" = series ] && echo 1 || echo 0)"
    unpatch "$name"
    kernel_config "$config" "$src" "$obj" ARCH="$karch" ${cross:+CROSS_COMPILE=$cross}
    log "building the $name kernel (make -j$JOBS, log in $obj.log)"
    build_kernel "the $name kernel" "$obj.log" "${mk[@]}" -C "$src" O="$obj" "$(basename "$image")" modules
    build_secs[$name]=$BUILD_SECS
    log "$name kernel built in ${build_secs[$name]} s"
}
for k in ${kernels//+series/}; do build "$k"; done
echo "${mk[*]}" > "$work/make-vars"  # for what kernel-selftests.sh builds against them
kernel_has() { [[ " $kernels " = *" $1 "* ]]; }
! { kernel_has stock && kernel_has series; } || cmp "$work/obj-stock/.config" "$work/obj-series/.config" ||
    die "the stock and series configs differ"
# powerpc: an ELFv2 call site, by -mprofile-kernel or by Debian's
# -fpatchable-function-entry (sid's gcc 16): FTRACE_MCOUNT_MAX_OFFSET is defined.
[ "$karch" != powerpc ] || grep -qE '^CONFIG_(MPROFILE_KERNEL|ARCH_USING_PATCHABLE_FUNCTION_ENTRY)=y$' \
    "$work/obj-${kernels%% *}/.config" || die "the config has neither -mprofile-kernel nor patchable entries"

# variant NAME TREE PATCH...: TREE's kernel with the PATCHes (-p1, in turn)
# applied, built incrementally in TREE's objects, its image kept as
# WORK/obj-NAME/IMAGE; then TREE's files are put back and its kernel built again.
variant() {
    local name=$1 tree=$2 src=$work/src-$2 obj=$work/obj-$2 stamp f; shift 2
    stamp=$(cat "$@" "$obj/.config" "$src/.zwm-stamp" | sha256sum)
    [ "$(cat "$work/obj-$name.stamp" 2>/dev/null)" != "$stamp" ] || [ ! -f "$work/obj-$name/$image" ] || return 0
    mkdir -p "$work/orig-$tree"
    sed -n 's|^+++ b/||p' "$@" | while read -r f; do (cd "$src" && cp --parents "$f" "$work/orig-$tree/"); done
    # shellcheck disable=SC2064 # the tree now: the function's locals are gone on exit
    trap "unpatch $tree" EXIT
    (cd "$src" && cat "$@" | patch -p1 -s) || die "$(basename -a "$@" | xargs) do not apply to the $tree tree"
    log "building the $name kernel: $tree with $(basename -a "$@" | xargs) (incremental, log in $obj.$name.log)"
    build_kernel "the $name kernel" "$obj.$name.log" "${mk[@]}" -C "$src" O="$obj" "$(basename "$image")"
    build_secs[$name]=$BUILD_SECS
    mkdir -p "$work/obj-$name/$(dirname "$image")"
    cp "$obj/$image" "$work/obj-$name/$image"
    unpatch "$tree"; trap - EXIT
    build_kernel "the $tree kernel (again, after the $name one)" "$obj.again.log" \
        "${mk[@]}" -C "$src" O="$obj" "$(basename "$image")"
    echo "$stamp" > "$work/obj-$name.stamp"
}
# The lookup kernel: stock with the series' first patch alone, the
# ftrace_location() fix, for patch 5's selftest with the dead record kept.
! kernel_has series || ! kernel_has stock || variant lookup stock "${PATCHES[0]}"

# arm64 builds KVM in: no kvm.ko to load.  Its proof is patch 5's selftest
# (kernel-selftests.sh --arch aarch64), with the stock kernel as the control.
if [ "$kvm_path" = - ]; then
    log "built; no kvm.ko on $arch: kernel-selftests.sh --arch $arch --forms '' boots these"
    exit 0
fi

# The negative control: the series with its pass broken (floor.patch).
# On a "+series" row (one cold build) the series kernel is a variant too:
# the stock tree with the series' diffs but the selftest's (tools/).
floor=$REPO/scripts/kernel-bench/floor.patch
if kernel_has +series; then
    series_diffs | awk '/^diff --git /{k = $3 !~ /^a\/tools\//} k' > "$work/series.diff"
    variant series stock "$work/series.diff"
    variant broken stock "$work/series.diff" "$floor"; kernels=${kernels/+/}
else variant broken series "$floor"; fi

# --- kvm.ko in four forms --------------------------------------------------------
# From the stock build where there is one: the series changes no module.
mb=$work/obj-$(kernel_has stock && echo stock || echo series)
m=$work/modules
rm -rf "$m"; mkdir -p "$m"
cp "$mb/$kvm_path" "$m/unchecked-kvm.ko"
[ "$dep" = - ] || cp "$mb/$dep" "$m/dep.ko"
"$ZWM" --format=json --kconfig "$mb/include/config/auto.conf" -o "$m/processed-kvm.ko" "$m/unchecked-kvm.ko" \
    >"$m/tool.json" 2>"$m/tool.log" || { cat "$m/tool.log" >&2; die "the tool failed on kvm.ko"; }
summary=$(python3 "$HERE/report.py" summary "$m/tool.json")
"${cross}strip" --strip-debug -o "$m/debug-stripped-kvm.ko" "$m/unchecked-kvm.ko"
"${cross}strip" --strip-unneeded -o "$m/stripped-kvm.ko" "$m/unchecked-kvm.ko"
cmp -s "$m/processed-kvm.ko" "$m/unchecked-kvm.ko" && die "the tool changed nothing in kvm.ko: nothing to prove"
"${cross}nm" "$m/unchecked-kvm.ko" > "$m/unchecked-kvm.nm"
log "kvm.ko: unchecked, processed ($summary), debug-stripped, stripped"
if [ $build_only = 1 ]; then
    log "built; stopping there (--build-only)"
    exit 0
fi

# --- boots -------------------------------------------------------------------------
forms="unchecked-kvm processed-kvm debug-stripped-kvm stripped-kvm"
boot() { # KERNEL OUTDIR LOADS CASE...
    local kernel=$1 out=$2 loads=$3 c cases=() deps=(); shift 3
    rm -rf "$out"; mkdir -p "$out/cases.d"
    for c in "$@"; do
        cp "$m/$c.ko" "$out/cases.d/"
        echo "$c kvm $loads full" >> "$out/cases"
        cases+=(--add "$out/cases.d/$c.ko=cases.d/$c.ko")
    done
    [ "$dep" = - ] || deps=("$m/dep.ko")
    echo "$kernel" > "$out/kernel"
    "$GUEST/run.sh" --arch "$arch" --kernel "$work/obj-$kernel/$image" \
        --out "$out" --mem 1024 --timeout "$boot_timeout" --payload "$GUEST/payload/loads.sh" \
        --add "$out/cases=cases" "${cases[@]}" ${deps[@]+"${deps[@]}"} ||
        log "warning: the guest did not power off in time ($out)"
    log "booted $kernel with $* in $(cat "$out/boot-seconds") s"
}
boots=()
start=$(now)
for r in $(seq 1 "$rounds"); do
    for k in $kernels; do
        # shellcheck disable=SC2086 # the case names are words on purpose
        boot "$k" "$work/boots/$r-$k" "$loads" $forms
        boots+=("$work/boots/$r-$k")
    done
done
boot_secs=$(( $(now) - start ))
boot broken "$work/boots/negative" 1 unchecked-kvm
touch "$work/boots/negative/expect-warn"
boots+=("$work/boots/negative")

{
    for k in $kernels; do echo -n "The $k kernel built in ${build_secs[$k]:-(earlier run)} s; "; done
    echo "make -j$JOBS, ARCH=$karch${cross:+ CROSS_COMPILE=$cross} ($("${cross}gcc" --version | head -n 1))."
    echo "$(( rounds * $(wc -w <<<"$kernels") )) boots with $loads loads per case took $boot_secs s (plus one for the negative control, $(cat "$work/boots/negative/boot-seconds") s)."
    echo "The tool on kvm.ko: $summary"
    echo
} > "$work/header.md"
rc=0
python3 "$HERE/report.py" "$work/report.md" "$m/tool.json" "$m/unchecked-kvm.nm" "${boots[@]}" || rc=1
cat "$work/header.md" "$work/report.md" > "$work/report.full.md"
cat "$work/header.md"
exit $rc
