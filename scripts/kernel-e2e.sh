#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# kernel-e2e.sh — prove the kernel half (kernel/*.patch) in real kernels.
#
#   scripts/kernel-e2e.sh [--arch x86_64|ppc64le] [--quick] [--build-only]
#                         [--work DIR] [--rounds N] [--loads N]
#
# --quick (what .ci/run can always afford, about a minute): the series
#   applies with `git apply` (no fuzz, no offset slack) to the files it
#   touches in Debian's linux-source-7.2, and the Kbuild hook it adds is
#   byte-for-byte Makefile.snippet.  The tag's round trip through the tool
#   and kmod's modinfo is in `cargo test` (tests/mark.rs).
#
# Full run, for one arch (a row of ROWS below):
#   1. build the row's kernels from that source with its config
#      (scripts/kernel-e2e/config*.sh): x86_64 builds stock and series,
#      ppc64le (a cross build of most of an hour) the series alone; the
#      series build runs the tool on every module through the hook, as a
#      distribution would;
#   2. collect kvm.ko: stock (no tag; where a stock kernel is built), tagged
#      (the series build's own, processed by the hook), unchecked (relinked
#      from the series build's objects without the hook: a module built
#      without the tool), stripped (tagged, then `strip --strip-unneeded`,
#      so that its tag no longer matches its symbol count) and forged (the
#      unchecked one with a tag forged to match its counts, nothing zeroed);
#      check each tag with kmod's modinfo against scripts/kernel-e2e/counts.py;
#      the tool run by hand on the unchecked one must give the tagged one
#      byte for byte; on x86_64, an external module (testdata/zwm_test, M=)
#      built against the series kernel with and without the tool;
#   3. boot under QEMU/TCG with one vCPU (scripts/guest/run.sh, payload
#      loads.sh), --rounds times, each kernel in turn, loading and unloading
#      its cases --loads times per boot: stock kernel: stock and tagged
#      kvm.ko; series kernel: tagged, unchecked and stripped kvm.ko; then the
#      negative control: forged kvm.ko, which the series kernel must trust
#      and so WARN on;
#   4. scripts/kernel-e2e/report.py judges the boots (see its docstring)
#      and writes the table to WORK/report.md.
#
# --build-only stops after step 2 (scripts/kernel-bench.sh and
# scripts/kernel-selftests.sh build on it).
#
# Defaults: --arch x86_64, --rounds and --loads from the row (x86_64: 4 and
# 10, 40 timed loads per case; ppc64le: 1 and 5), WORK
# ${ZWM_CACHE:-~/.cache/zero-weak-mcount}/kernel-e2e (x86_64) or
# kernel-e2e-ppc64le.  Builds are incremental.  Environment: ZWM_JOBS (make
# -j, default nproc+1), ZWM_NICE (niceness of the builds, default 0), ZWM
# (the tool; default a fresh cargo build --release).
#
# Host needs: make gcc flex bison bc libelf-dev libssl-dev git cpio python3
# kmod, the row's QEMU and cross compiler.  Missing ones are installed with
# apt-get when run as root (.ci/run installs them up front).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HERE=$REPO/scripts/kernel-e2e
PROG=kernel-e2e DIE_STATUS=2
. "$REPO/scripts/lib.sh"

# The arches: kernel ARCH, cross prefix, config script, the kernels built,
# the kvm.ko path, the modules kvm.ko needs first, the default rounds and
# loads, the boot timeout, and the packages of the compiler and QEMU.
# ppc64le's kvm.ko needs no irqbypass.ko (IRQ_BYPASS_MANAGER is built in).
ROWS="
x86_64  x86_64  -                       config.sh          stock,series  arch/x86/kvm/kvm.ko      virt/lib/irqbypass.ko  4 10  900   gcc                          qemu-system-x86
ppc64le powerpc powerpc64le-linux-gnu-  config-ppc64le.sh  series        arch/powerpc/kvm/kvm.ko  -                      1 5   1800  gcc-powerpc64le-linux-gnu    qemu-system-ppc
"
arch=x86_64 quick=0 build_only=0 rounds= loads= work=
while [ $# -gt 0 ]; do
    case "$1" in
        --arch) arch=$2; shift 2;;
        --quick) quick=1; shift;;
        --build-only) build_only=1; shift;;
        --work) work=$2; shift 2;;
        --rounds) rounds=$2; shift 2;;
        --loads) loads=$2; shift 2;;
        *) arg_error "$1";;
    esac
done
row=$(awk -v a="$arch" '$1 == a' <<<"$ROWS")
[ -n "$row" ] || die "unknown arch $arch (x86_64|ppc64le)"
read -r _ karch cross config kernels kvm_path dep def_rounds def_loads boot_timeout cc_pkg qemu_pkg <<<"$row"
[ "$cross" != - ] || cross=
kernels=${kernels//,/ }
rounds=${rounds:-$def_rounds} loads=${loads:-$def_loads}
cache=${ZWM_CACHE:-$HOME/.cache/zero-weak-mcount}
[ -n "$work" ] || { work=$cache/kernel-e2e; [ "$arch" = x86_64 ] || work=$work-$arch; }
mkdir -p "$work"
work=$(cd "$work" && pwd)
jobs=${ZWM_JOBS:-$(( $(nproc) + 1 ))}
mk=(make ARCH="$karch" ${cross:+CROSS_COMPILE=$cross})

# --- host tools --------------------------------------------------------------------
# command-or-file  package
needs=("git git" "python3 python3" "xz xz-utils")
[ $quick = 1 ] || needs+=("make make" "gcc gcc" "${cross}gcc $cc_pkg" "flex flex" "bison bison" "bc bc"
    "cpio cpio" "$(awk -v a="$arch" '$1 == a {print $2}' "$GUEST/arches.tsv") $qemu_pkg" "modinfo kmod"
    "/usr/include/gelf.h libelf-dev" "/usr/include/openssl/evp.h libssl-dev" "/bin/busybox busybox-static")
missing_packages "${needs[@]}"
install_packages "${MISSING[@]}"

# --- the source ------------------------------------------------------------------
series_source
# The files the series touches, from its diff headers; new files excluded.
mapfile -t touched < <(sed -n 's|^--- a/||p' "${PATCHES[@]}" | sort -u)
log "series: checking that ${#PATCHES[@]} patches apply to $(basename "$TARBALL") (${#touched[@]} files)"
t=$work/apply-check
rm -rf "$t"; mkdir -p "$t"
tar -xJf "$TARBALL" -C "$t" --strip-components=1 "${touched[@]/#/linux-source-7.2/}"
(cd "$t" && git apply --verbose "${PATCHES[@]}" 2>&1 | sed 's/^/  /' >&2) ||
    die "the series does not apply cleanly to Debian's linux-source-7.2"
cmp "$t/scripts/Makefile.zero-weak-mcount" "$REPO/Makefile.snippet" ||
    die "kernel/0001 adds a scripts/Makefile.zero-weak-mcount that is not Makefile.snippet: regenerate the series (kernel/README.md)"
log "series: applies cleanly; its Makefile.zero-weak-mcount is Makefile.snippet"
if [ $quick = 1 ]; then
    echo "kernel-e2e: quick: PASS"
    exit 0
fi

ZWM=$(find_tool "${ZWM:-}") || exit 2

# --- the kernels -------------------------------------------------------------------
declare -A build_secs
build() { # NAME
    local name=$1 src=$work/src-$1 obj=$work/obj-$1 start hook=()
    unpack_tree "$src" "$([ "$name" = series ] && echo 1 || echo 0)"
    [ "$name" != series ] || hook=("ZERO_WEAK_MCOUNT=$ZWM")
    "$HERE/$config" "$src" "$obj.config-new" ${cross:+CROSS_COMPILE=$cross}
    install_config "$obj.config-new" "$obj"
    log "building the $name kernel (make -j$jobs, log in $obj.log)"
    start=$(now)
    nice -n "${ZWM_NICE:-0}" "${mk[@]}" -C "$src" O="$obj" -j"$jobs" "${hook[@]}" \
            "$("$GUEST/run.sh" --image "$arch" | xargs basename)" modules >"$obj.log" 2>&1 ||
        { tail -n 30 "$obj.log" >&2; die "the $name kernel did not build"; }
    build_secs[$name]=$(( $(now) - start ))
    log "$name kernel built in ${build_secs[$name]} s"
}
for k in $kernels; do build "$k"; done
se=$work/obj-series so=$work/obj-stock
if [ -d "$so" ] && [[ " $kernels " = *" stock "* ]]; then
    # The series adds BUILDTIME_MCOUNT_ZERO, on by default; nothing else may differ.
    config_diff=$(diff <(grep -v '^#' "$so/.config" | sort) <(grep -v '^#' "$se/.config" | sort) | grep '^[<>]' || true)
    [ "$config_diff" = "> CONFIG_BUILDTIME_MCOUNT_ZERO=y
> CONFIG_HAVE_BUILDTIME_MCOUNT_ZERO=y" ] ||
        die "the two configs differ in more than CONFIG_BUILDTIME_MCOUNT_ZERO: $config_diff"
else
    for o in CONFIG_BUILDTIME_MCOUNT_ZERO=y ${cross:+CONFIG_MPROFILE_KERNEL=y}; do
        has_line "$o" cat "$se/.config" || die "the series config lacks $o (gcc's -mprofile-kernel, which defines FTRACE_MCOUNT_MAX_OFFSET)"
    done
fi

# --- kvm.ko four ways, and forged ----------------------------------------------------
m=$work/modules
rm -rf "$m"; mkdir -p "$m"
kernel_has() { [[ " $kernels " = *" $1 "* ]]; }
if kernel_has stock; then
    cp "$so/$kvm_path" "$m/stock-kvm.ko"
    [ "$dep" = - ] || cp "$so/$dep" "$m/stock-dep.ko"
fi
cp "$se/$kvm_path" "$m/tagged-kvm.ko"
[ "$dep" = - ] || cp "$se/$dep" "$m/series-dep.ko"
unhooked "$se" "$kvm_path" "$m/unchecked-kvm.ko"

tag() { modinfo -F mcount "$1"; }
# scripts/module-common.c's value before the tool runs.
placeholder=unchecked:--------:--------
# The tag the kernel accepts: callsite and symbol table entries, counted
# here from the section headers, independently of the tool.
bound() { "$HERE/counts.py" "$1"; }
if kernel_has stock; then
    [ "$(tag "$m/stock-kvm.ko")" = "" ] || die "stock kvm.ko has an mcount tag"
fi
[ "$(tag "$m/tagged-kvm.ko")" = "$(bound "$m/tagged-kvm.ko")" ] ||
    die "the series build's kvm.ko is not tagged $(bound "$m/tagged-kvm.ko"): $(tag "$m/tagged-kvm.ko")"
[ "$(tag "$m/unchecked-kvm.ko")" = "$placeholder" ] || die "the relinked kvm.ko is not unchecked"
if [ "$dep" != - ]; then
    [ "$(tag "$m/series-dep.ko")" = "$(bound "$m/series-dep.ko")" ] || die "the series build's $(basename "$dep") is not tagged"
fi
"$ZWM" -v --kconfig "$se/include/config/auto.conf" -o "$m/by-hand-kvm.ko" "$m/unchecked-kvm.ko" 2>"$m/by-hand.log" ||
    { cat "$m/by-hand.log" >&2; die "the tool failed on the unchecked kvm.ko"; }
cmp "$m/by-hand-kvm.ko" "$m/tagged-kvm.ko" || die "the tool by hand and the Kbuild hook disagree on kvm.ko"
summary=$(tail -n 1 "$m/by-hand.log")
# Stripped after the hook: static functions lose their symbols, so the tag
# is stale, and the series kernel must treat the module as untagged.
"${cross}strip" --strip-unneeded -o "$m/stripped-kvm.ko" "$m/tagged-kvm.ko"
[ "$(tag "$m/stripped-kvm.ko")" = "$(tag "$m/tagged-kvm.ko")" ] || die "strip changed the tag"
[ "$(bound "$m/stripped-kvm.ko")" != "$(tag "$m/stripped-kvm.ko")" ] || die "strip left the symbol count as it was"
# The negative control: the unchecked module with a tag forged to match its
# counts, nothing zeroed: what trusting a tag that lies would mean.  The
# series kernel must skip its load-time pass for it and WARN on the stale
# records; otherwise the boots could not tell a valid tag from none.
python3 - "$m/unchecked-kvm.ko" "$m/forged-kvm.ko" "$(bound "$m/unchecked-kvm.ko")" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
old = b"\0mcount=unchecked:--------:--------\0"
assert data.count(old) == 1
open(sys.argv[2], "wb").write(data.replace(old, b"\0mcount=" + sys.argv[3].encode() + b"\0" * 4))
PY
[ "$(tag "$m/forged-kvm.ko")" = "$(bound "$m/forged-kvm.ko")" ] || die "forging the tag failed"
"${cross}nm" "$m/unchecked-kvm.ko" > "$m/unchecked-kvm.nm"

# --- an external module (DKMS, out of tree) against the series kernel ---------------
# It gets the tag and the hook too.  The tool is optional: without it the
# build warns once and the module stays unchecked; with it, the module
# comes out zeroed and tagged.
external=
if [ "$arch" = x86_64 ]; then
    ext=$work/external
    rm -rf "$ext"; cp -r "$REPO/testdata/zwm_test" "$ext"
    "${mk[@]}" -C "$work/src-series" O="$se" M="$ext" ZERO_WEAK_MCOUNT=/nonexistent/zero-weak-mcount \
            modules >"$ext.missing.log" 2>&1 ||
        { tail -n 20 "$ext.missing.log" >&2; die "an external module did not build against the series kernel without the tool"; }
    warned=$(grep -c "zero-weak-mcount: '/nonexistent/zero-weak-mcount' was not found or did not run" "$ext.missing.log" || true)
    [ "$warned" = 1 ] || { tail -n 20 "$ext.missing.log" >&2; die "the build without the tool warned $warned times, not once"; }
    [ "$(tag "$ext/zwm_test.ko")" = "$placeholder" ] || die "the external zwm_test.ko built without the tool is not unchecked"
    rm -f "$ext/zwm_test.ko"
    "${mk[@]}" -C "$work/src-series" O="$se" M="$ext" ZERO_WEAK_MCOUNT="$ZWM" modules >"$ext.log" 2>&1 ||
        { tail -n 20 "$ext.log" >&2; die "the external module did not build with the tool"; }
    [ "$(tag "$ext/zwm_test.ko")" = "$(bound "$ext/zwm_test.ko")" ] || die "the external zwm_test.ko is not tagged"
    "$ZWM" --check --kconfig "$se/include/config/auto.conf" "$ext/zwm_test.ko" ||
        die "the external zwm_test.ko still has entries to zero"
    external="without the tool the build warns once and zwm_test.ko stays unchecked; with it, zwm_test.ko is zeroed and tagged"
    log "external module: $external"
fi
log "kvm.ko: ${kernels/stock/stock (no tag),} tagged (the hook's), unchecked (relinked), stripped, forged; by hand: $summary"
if [ $build_only = 1 ]; then
    log "built; stopping there (--build-only)"
    exit 0
fi

# --- boots -------------------------------------------------------------------------
boot() { # KERNEL OUTDIR LOADS CASE...
    local kernel=$1 out=$2 loads=$3 c cases=() deps=(); shift 3
    rm -rf "$out"; mkdir -p "$out/cases.d"
    for c in "$@"; do
        cp "$m/$c.ko" "$out/cases.d/"
        echo "$c kvm $loads full" >> "$out/cases"
        cases+=(--add "$out/cases.d/$c.ko=cases.d/$c.ko")
    done
    [ "$dep" = - ] || deps=("$m/$kernel-dep.ko")
    echo "$kernel" > "$out/kernel"
    "$GUEST/run.sh" --arch "$arch" --kernel "$work/obj-$kernel/$("$GUEST/run.sh" --image "$arch")" \
        --out "$out" --mem 1024 --timeout "$boot_timeout" --payload "$GUEST/payload/loads.sh" \
        --add "$out/cases=cases" "${cases[@]}" ${deps[@]+"${deps[@]}"} ||
        log "warning: the guest did not power off in time ($out)"
    log "booted $kernel with $* in $(cat "$out/boot-seconds") s"
}
declare -A cases_of=([stock]="stock-kvm tagged-kvm" [series]="tagged-kvm unchecked-kvm stripped-kvm")
boots=()
start=$(now)
for r in $(seq 1 "$rounds"); do
    for k in $kernels; do
        # shellcheck disable=SC2086 # the case names are words on purpose
        boot "$k" "$work/boots/$r-$k" "$loads" ${cases_of[$k]}
        boots+=("$work/boots/$r-$k")
    done
done
boot_secs=$(( $(now) - start ))
boot series "$work/boots/negative" 1 forged-kvm
touch "$work/boots/negative/expect-warn"
boots+=("$work/boots/negative")

{
    for k in $kernels; do echo -n "The $k kernel built in ${build_secs[$k]} s; "; done
    echo "make -j$jobs, ARCH=$karch${cross:+ CROSS_COMPILE=$cross} ($("${cross}gcc" --version | head -n 1))."
    echo "$(( rounds * $(wc -w <<<"$kernels") )) boots with $loads loads per case took $boot_secs s (plus one for the negative control, $(cat "$work/boots/negative/boot-seconds") s)."
    echo "The tool on the relinked kvm.ko: $summary"
    [ -z "$external" ] || echo "An external module (testdata/zwm_test, M=) against the series kernel: $external."
    echo
} > "$work/header.md"
rc=0
python3 "$HERE/report.py" "$work/report.md" "$m/by-hand.log" "$m/unchecked-kvm.nm" "${boots[@]}" || rc=1
cat "$work/header.md" "$work/report.md" > "$work/report.full.md"
cat "$work/header.md"
exit $rc
