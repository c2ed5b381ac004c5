#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# kernel-e2e.sh — prove the kernel half (kernel/*.patch) in real kernels.
#
#   scripts/kernel-e2e.sh [--quick] [--build-only] [--work DIR] [--rounds N] [--loads N]
#
# --quick (what .ci/run can always afford, about a minute): the series
#   applies with `git apply` (no fuzz, no offset slack) to the files it
#   touches in Debian's linux-source-7.2, and the Kbuild hook it adds is
#   byte-for-byte Makefile.snippet.  The tag's round trip through the tool
#   and kmod's modinfo is in `cargo test` (tests/mark.rs).
#
# Full run: all of the above, then
#   1. build a trimmed x86_64 7.2 kernel twice from that source, stock and
#      with the series (scripts/kernel-e2e/config.sh; the series build runs
#      the tool on every module through the hook, as a distribution would);
#   2. collect kvm.ko four ways: stock (no tag), tagged (the series build's
#      own, processed by the hook), unchecked (relinked from the series
#      build's objects without the hook: a module built without the tool)
#      and stripped (tagged, then `strip --strip-unneeded`, so that its tag
#      no longer matches its symbol count), and check each one's tag with
#      kmod's modinfo; the tool run by hand on the unchecked one must give
#      the tagged one byte for byte;
#   3. boot each kernel --rounds times under QEMU/TCG with one vCPU,
#      interleaved, loading and unloading its cases --loads times per boot:
#      stock kernel: stock and tagged kvm.ko; series kernel: tagged,
#      unchecked and stripped kvm.ko; then the negative control: the
#      unchecked kvm.ko with a tag forged to match its counts, which the
#      series kernel must trust and so WARN on;
#   4. scripts/kernel-e2e/report.py judges the boots (see its docstring)
#      and writes the table to WORK/report.md.
#
# --build-only stops after step 2 (scripts/kernel-bench.sh builds on it).
#
# Defaults: --rounds 4 --loads 10 (40 timed loads per case), WORK
# ${ZWM_CACHE:-~/.cache/zero-weak-mcount}/kernel-e2e.  Builds are
# incremental: a second run rebuilds only what changed.  Environment:
# ZWM_JOBS (make -j, default nproc+1), ZWM (the tool; default a fresh
# cargo build --release), ZWM_OFFLINE=1 (no package list refresh).
#
# Host needs: make gcc flex bison bc libelf-dev libssl-dev git cpio python3
# qemu-system-x86 busybox-static kmod.  Missing ones are installed with
# apt-get when run as root (.ci/run installs them up front).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HERE=$REPO/scripts/kernel-e2e
PROG=kernel-e2e DIE_STATUS=2
. "$REPO/scripts/lib.sh"
now() { date +%s; }

quick=0 build_only=0 rounds=4 loads=10
work=${ZWM_CACHE:-$HOME/.cache/zero-weak-mcount}/kernel-e2e
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) quick=1; shift;;
        --build-only) build_only=1; shift;;
        --work) work=$2; shift 2;;
        --rounds) rounds=$2; shift 2;;
        --loads) loads=$2; shift 2;;
        -h|--help) sed -n '2,/^set -/{/^set -/d;s/^# \{0,1\}//;p}' "$0"; exit 0;;
        *) die "unknown argument $1 (see --help)";;
    esac
done
mkdir -p "$work"
work=$(cd "$work" && pwd)
jobs=${ZWM_JOBS:-$(( $(nproc) + 1 ))}

# --- host tools: missing Debian packages are installed, as scripts/e2e.sh does ----
# command-or-file  package
needs=("git git" "python3 python3" "xz xz-utils")
[ $quick = 1 ] || needs+=("make make" "gcc gcc" "flex flex" "bison bison" "bc bc" "cpio cpio"
    "qemu-system-x86_64 qemu-system-x86" "modinfo kmod" "/usr/include/gelf.h libelf-dev"
    "/usr/include/openssl/evp.h libssl-dev" "/bin/busybox busybox-static")
missing_packages "${needs[@]}"
install_packages "${MISSING[@]}"
if [ $quick = 0 ]; then
    applets=$(/bin/busybox --list 2>/dev/null || true)
    grep -qx insmod <<<"$applets" || die "/bin/busybox has no insmod (apt-get install busybox-static)"
fi

# --- the source ------------------------------------------------------------------
root=$("$REPO/scripts/fetch-debian-kernel.sh" sid amd64 linux-source-7.2) || die "fetching linux-source-7.2 failed"
tarball=$root/usr/src/linux-source-7.2.tar.xz
[ -f "$tarball" ] || die "no $tarball"
mapfile -t patches < <(ls "$REPO"/kernel/*.patch)
[ ${#patches[@]} -gt 0 ] || die "no kernel/*.patch"

# The files the series touches, from its diff headers; new files excluded.
mapfile -t touched < <(sed -n 's|^--- a/||p' "${patches[@]}" | sort -u)

log "series: checking that ${#patches[@]} patches apply to $(basename "$tarball") (${#touched[@]} files)"
t=$work/apply-check
rm -rf "$t"; mkdir -p "$t"
tar -xJf "$tarball" -C "$t" --strip-components=1 "${touched[@]/#/linux-source-7.2/}"
(cd "$t" && git apply --verbose "${patches[@]}" 2>&1 | sed 's/^/  /' >&2) ||
    die "the series does not apply cleanly to Debian's linux-source-7.2"
cmp "$t/scripts/Makefile.zero-weak-mcount" "$REPO/Makefile.snippet" ||
    die "kernel/0001 adds a scripts/Makefile.zero-weak-mcount that is not Makefile.snippet: regenerate the series (kernel/README.md)"
log "series: applies cleanly; its Makefile.zero-weak-mcount is Makefile.snippet"
if [ $quick = 1 ]; then
    echo "kernel-e2e: quick: PASS"
    exit 0
fi

# --- the tool --------------------------------------------------------------------
ZWM=$(find_tool "${ZWM:-}") || exit 2

# --- two kernels -----------------------------------------------------------------
# A tree is unpacked once per tarball and series; tar keeps the archive's
# mtimes, so an unchanged tree builds incrementally.
unpack() { # DIR SERIES(0|1)
    local dir=$1 series=$2 stamp
    stamp=$(stat -c '%s %Y' "$tarball")
    [ "$series" = 0 ] || stamp="$stamp $(cat "${patches[@]}" | sha256sum)"
    if [ -f "$dir/.zwm-stamp" ] && [ "$(cat "$dir/.zwm-stamp")" = "$stamp" ]; then
        return
    fi
    log "unpacking $(basename "$dir")"
    rm -rf "$dir"; mkdir -p "$dir"
    tar -xJf "$tarball" -C "$dir" --strip-components=1
    if [ "$series" = 1 ]; then
        (cd "$dir" && git apply "${patches[@]}") || die "the series does not apply"
    fi
    echo "$stamp" > "$dir/.zwm-stamp"
}

declare -A build_secs
build() { # NAME SERIES
    local name=$1 series=$2 src=$work/src-$1 obj=$work/obj-$1 start extra=() hook=()
    unpack "$src" "$series"
    if [ "$series" = 1 ]; then
        hook=("ZERO_WEAK_MCOUNT=$ZWM")
    fi
    ZWM_KCONFIG_EXTRA="${extra[*]}" "$HERE/config.sh" "$src" "$obj.config-new"
    # Keep the old .config (and its mtime) when nothing changed.
    if ! cmp -s "$obj.config-new/.config" "$obj/.config" 2>/dev/null; then
        mkdir -p "$obj"; cp "$obj.config-new/.config" "$obj/.config"
    fi
    rm -rf "$obj.config-new"
    log "building the $name kernel (make -j$jobs, log in $obj.log)"
    start=$(now)
    make -C "$src" O="$obj" ARCH=x86_64 -j"$jobs" "${hook[@]}" bzImage modules >"$obj.log" 2>&1 ||
        { tail -n 30 "$obj.log" >&2; die "the $name kernel did not build"; }
    build_secs[$name]=$(( $(now) - start ))
    log "$name kernel built in ${build_secs[$name]} s"
}
build stock 0
build series 1
so=$work/obj-stock se=$work/obj-series
# The series adds BUILDTIME_MCOUNT_ZERO, on by default on x86; nothing
# else may differ.
config_diff=$(diff <(grep -v '^#' "$so/.config" | sort) <(grep -v '^#' "$se/.config" | sort) | grep '^[<>]' || true)
[ "$config_diff" = "> CONFIG_BUILDTIME_MCOUNT_ZERO=y
> CONFIG_HAVE_BUILDTIME_MCOUNT_ZERO=y" ] ||
    die "the two configs differ in more than CONFIG_BUILDTIME_MCOUNT_ZERO: $config_diff"

# --- kvm.ko four ways --------------------------------------------------------------
m=$work/modules
rm -rf "$m"; mkdir -p "$m"
cp "$so/arch/x86/kvm/kvm.ko" "$m/stock-kvm.ko"
cp "$so/virt/lib/irqbypass.ko" "$m/stock-irqbypass.ko"
cp "$se/arch/x86/kvm/kvm.ko" "$m/tagged-kvm.ko"
cp "$se/virt/lib/irqbypass.ko" "$m/series-irqbypass.ko"
# The link command Kbuild saved, without the hook's ": zero-weak-mcount ..." record.
link=$(sed -n 's/^savedcmd_arch\/x86\/kvm\/kvm.ko := //p' "$se/arch/x86/kvm/.kvm.ko.cmd")
link=${link%%; : zero-weak-mcount*}
case "$link" in *" -o arch/x86/kvm/kvm.ko "*) ;; *) die "unexpected kvm.ko link command: $link";; esac
(cd "$se" && eval "${link/ -o arch\/x86\/kvm\/kvm.ko / -o $m/unchecked-kvm.ko }") || die "relinking kvm.ko failed"

tag() { modinfo -F mcount "$1"; }
# scripts/module-common.c's value before the tool runs.
placeholder=unchecked:--------:--------
# The tag the kernel accepts: callsite and symbol table entries, counted
# here from the section headers, independently of the tool.
bound() { "$HERE/counts.py" "$1"; }
[ "$(tag "$m/stock-kvm.ko")" = "" ] || die "stock kvm.ko has an mcount tag"
[ "$(tag "$m/tagged-kvm.ko")" = "$(bound "$m/tagged-kvm.ko")" ] ||
    die "the series build's kvm.ko is not tagged $(bound "$m/tagged-kvm.ko"): $(tag "$m/tagged-kvm.ko")"
[ "$(tag "$m/unchecked-kvm.ko")" = "$placeholder" ] || die "the relinked kvm.ko is not unchecked"
[ "$(tag "$m/series-irqbypass.ko")" = "$(bound "$m/series-irqbypass.ko")" ] || die "the series build's irqbypass.ko is not tagged"
"$ZWM" -v --kconfig "$se/include/config/auto.conf" -o "$m/by-hand-kvm.ko" "$m/unchecked-kvm.ko" 2>"$m/by-hand.log" ||
    { cat "$m/by-hand.log" >&2; die "the tool failed on the unchecked kvm.ko"; }
cmp "$m/by-hand-kvm.ko" "$m/tagged-kvm.ko" || die "the tool by hand and the Kbuild hook disagree on kvm.ko"
summary=$(tail -n 1 "$m/by-hand.log")
# Stripped after the hook: static functions lose their symbols, so the tag
# is stale, and the series kernel must treat the module as untagged.
strip --strip-unneeded -o "$m/stripped-kvm.ko" "$m/tagged-kvm.ko"
[ "$(tag "$m/stripped-kvm.ko")" = "$(tag "$m/tagged-kvm.ko")" ] || die "strip changed the tag"
[ "$(bound "$m/stripped-kvm.ko")" != "$(tag "$m/stripped-kvm.ko")" ] || die "strip left the symbol count as it was"

# --- an external module (DKMS, out of tree) against the series kernel ---------------
# It gets the tag and the hook too.  The tool is optional: without it the
# build warns once and the module stays unchecked; with it, the module
# comes out zeroed and tagged.
ext=$work/external
rm -rf "$ext"; cp -r "$REPO/testdata/zwm_test" "$ext"
make -C "$work/src-series" O="$se" M="$ext" ZERO_WEAK_MCOUNT=/nonexistent/zero-weak-mcount \
        modules >"$ext.missing.log" 2>&1 ||
    { tail -n 20 "$ext.missing.log" >&2; die "an external module did not build against the series kernel without the tool"; }
warned=$(grep -c "zero-weak-mcount: '/nonexistent/zero-weak-mcount' was not found or did not run" "$ext.missing.log" || true)
[ "$warned" = 1 ] || { tail -n 20 "$ext.missing.log" >&2; die "the build without the tool warned $warned times, not once"; }
[ "$(tag "$ext/zwm_test.ko")" = "$placeholder" ] || die "the external zwm_test.ko built without the tool is not unchecked"
rm -f "$ext/zwm_test.ko"
make -C "$work/src-series" O="$se" M="$ext" ZERO_WEAK_MCOUNT="$ZWM" modules >"$ext.log" 2>&1 ||
    { tail -n 20 "$ext.log" >&2; die "the external module did not build with the tool"; }
[ "$(tag "$ext/zwm_test.ko")" = "$(bound "$ext/zwm_test.ko")" ] || die "the external zwm_test.ko is not tagged"
"$ZWM" --check --kconfig "$se/include/config/auto.conf" "$ext/zwm_test.ko" ||
    die "the external zwm_test.ko still has entries to zero"
external="without the tool the build warns once and zwm_test.ko stays unchecked; with it, zwm_test.ko is zeroed and tagged"
log "external module: $external"

# The negative control: the unchecked module with a tag forged to match its
# counts, nothing zeroed: what trusting a tag that lies would mean.  The
# series kernel must skip its load-time pass for it and WARN on the stale
# records; otherwise the boots below could not tell a valid tag from none.
python3 - "$m/unchecked-kvm.ko" "$m/forged-kvm.ko" "$(bound "$m/unchecked-kvm.ko")" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
old = b"\0mcount=unchecked:--------:--------\0"
assert data.count(old) == 1
open(sys.argv[2], "wb").write(data.replace(old, b"\0mcount=" + sys.argv[3].encode() + b"\0" * 4))
PY
[ "$(tag "$m/forged-kvm.ko")" = "$(bound "$m/forged-kvm.ko")" ] || die "forging the tag failed"
log "kvm.ko: stock (no tag), tagged (the hook's), unchecked (relinked), stripped; by hand: $summary"
if [ $build_only = 1 ]; then
    log "built; stopping there (--build-only)"
    exit 0
fi

# --- boots -------------------------------------------------------------------------
boot() { # KERNEL OUTDIR LOADS CASE...
    local kernel=$1 out=$2 loads=$3 rd; shift 3
    rd=$out/initrd
    rm -rf "$out"; mkdir -p "$rd"/{bin,proc,sys,dev,m}
    cp /bin/busybox "$rd/bin/busybox"
    ln -s busybox "$rd/bin/sh"
    cp "$HERE/init" "$rd/init"
    cp "$m/$kernel-irqbypass.ko" "$rd/m/irqbypass.ko"
    for c in "$@"; do cp "$m/$c.ko" "$rd/m/$c.ko"; done
    echo "$loads $*" > "$rd/cases"
    echo "$kernel" > "$out/kernel"
    (cd "$rd" && find . -print0 | LC_ALL=C sort -z | cpio --quiet -o -0 -H newc -R 0:0) > "$out/initrd.cpio"
    local start
    start=$(now)
    timeout -k 5 900 qemu-system-x86_64 -accel tcg -smp 1 -m 1024 -nographic -no-reboot \
        -kernel "$work/obj-$kernel/arch/x86/boot/bzImage" -initrd "$out/initrd.cpio" \
        -append "console=ttyS0 panic=-1 loglevel=7 nokaslr" </dev/null >"$out/console.log" 2>"$out/qemu.stderr" ||
        log "warning: qemu exited with $? ($out)"
    log "booted $kernel with $* in $(( $(now) - start )) s"
}
boots=()
start=$(now)
for r in $(seq 1 "$rounds"); do
    boot stock "$work/boots/$r-stock" "$loads" stock-kvm tagged-kvm
    boots+=("$work/boots/$r-stock")
    boot series "$work/boots/$r-series" "$loads" tagged-kvm unchecked-kvm stripped-kvm
    boots+=("$work/boots/$r-series")
done
boot_secs=$(( $(now) - start ))
boot series "$work/boots/negative" 1 forged-kvm
touch "$work/boots/negative/expect-warn"
boots+=("$work/boots/negative")

{
    echo "Built in ${build_secs[stock]} s (stock) and ${build_secs[series]} s (series), make -j$jobs;"
    echo "$(( rounds * 2 )) boots with $loads loads per case each took $boot_secs s (plus one for the negative control)."
    echo "The tool on the relinked kvm.ko: $summary"
    echo "An external module (testdata/zwm_test, M=) against the series kernel: $external."
    echo
} > "$work/header.md"
rc=0
python3 "$HERE/report.py" "$work/report.md" "${boots[@]}" || rc=1
cat "$work/header.md" "$work/report.md" > "$work/report.full.md"
cat "$work/header.md"
exit $rc
