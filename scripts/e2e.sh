#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# e2e.sh — prove zero-weak-mcount in real kernels (see docs/e2e.md).
#
# Usage: scripts/e2e.sh [--cases LIST] [--negative] [--no-negative]
#                       [--work DIR]
#
# Cases (default: all, in this order):
#   bookworm-amd64   Debian bookworm 6.1 x86_64 kernel + testdata/zwm_test
#                    rebuilt for it, irqbypass.ko and kvm.ko; tool run with
#                    the kernel's --kconfig and with the default (no config)
#   sid-amd64        Debian sid x86_64 kernel: irqbypass.ko + kvm.ko
#   sid-ppc64el      Debian sid ppc64le kernel: kvm.ko (pseries, power9)
#   sid-arm64        Debian sid arm64 kernel: rvu_nicpf.ko and the three
#                    modules it needs (virt, cortex max)
#   sid-riscv64      Debian sid riscv64 kernel: kvm.ko (virt, OpenSBI)
#   sid-s390x        Debian sid s390x kernel: kvm.ko with its init call
#                    removed on the test copies (TCG has no SIE)
#   trixie-ppc64el   Debian trixie 6.12 ppc64le kernel (newest build the
#                    mirror serves): kvm.ko; tool run with the kernel's
#                    --kconfig and with the default
#   trixie-amd64     Debian trixie 6.12 x86_64 kernel: irqbypass.ko + kvm.ko,
#                    then ib_core, ib_uverbs, rdmavt, dca + ib_qib.ko
#   bookworm-i386    Debian bookworm 6.1 686 kernel (qemu-system-i386 -cpu
#                    qemu32, busybox-static:i386): irqbypass.ko + kvm.ko
#   bookworm-ppc64el Debian bookworm 6.1 ppc64le kernel: kvm.ko (6.1 powerpc
#                    has no check and keeps weak callsites as records of the
#                    preceding function: the containment comparison), with
#                    the negative control on the same boots
#   negative         sid-amd64 kvm.ko processed by the zero-extra example
#                    (one extra *valid* entry zeroed): the comparison must
#                    FAIL, or the whole run fails
#   negative-arm64   the same for sid-arm64's rvu_nicpf.ko, under the
#                    containment comparison
# Cases run only when named (`make e2e-old`, docs/e2e.md), each with the
# negative control (one valid entry zeroed, or dropped where the tool
# drops) on the same boots:
#   bullseye-amd64   Debian bullseye 5.10 x86_64 (no check before 6.0):
#                    irqbypass + kvm.ko, ib_core, ib_uverbs, rdmavt, dca +
#                    ib_qib.ko, zeroed, containment comparison
#   bullseye-arm64   Debian bullseye 5.10 arm64: macsec.ko (nothing to drop;
#                    the control's dropped real entry must show)
#   bookworm-arm64   the same for Debian bookworm's 6.1 arm64 kernel
#   s390x-empty      Debian sid s390x: a module as processed (the tool never
#                    empties an s390 table) loads; the same module with its
#                    __mcount_loc emptied (what a drop of every entry would
#                    write) must fail to load, or the run fails
#   bpo-arm64        Debian bookworm-backports 6.12.94 arm64 (adjusts before
#                    the zero test): rvu_nicpf.ko and the three modules it
#                    needs, its two dead entries dropped
# Cases run only when named (they build a kernel: `make e2e-clang`):
#   clang-amd64      stock 7.2 x86_64 (IBT) built with clang/lld
#                    (scripts/build-clang-kernel.sh): irqbypass.ko + kvm.ko,
#                    tool with the build's --kconfig and with the default,
#                    and the zero-extra negative control on the same boots
#   clang-ppc64el    the same for a ppc64le pseries kernel cross-built with
#                    clang (kvm.ko alone)
# --negative runs only the negative control; --no-negative skips it.
#
# Each module is booted as shipped (signature stripped) and as processed; the
# run fails unless, for every module: the processed module loads; it shows no
# __ftrace_invalid_address___N line; all other available_filter_functions
# lines are identical (as a multiset); the invalid lines removed match one for
# one the distances the tool says it zeroed; the ftrace smoke test passes; and
# dmesg has no "ftrace bug", "WARNING:", "BUG:" or "Oops". On arm64, riscv64
# and s390x, whose kernels name a dead weak record after the function before
# it, records are placed in the module file by their ips instead: the dead
# ones (in no sized function) must be exactly the entries zeroed, and every
# record left must sit at a function's patch site (see docs/e2e.md).
#
# Environment: ZWM (tool binary; default target/release/zero-weak-mcount,
# refreshed with `cargo build --release`), ZWM_ZERO_EXTRA (negative-control
# binary; default the zero-extra example, built with cargo), ZWM_CACHE
# (download cache, see scripts/fetch-debian-kernel.sh), ZWM_E2E_WORK (work
# folder).
# Exit status: 0 all cases passed and the negative control was detected,
# 1 otherwise.
set -uo pipefail
# Builds run here must not inherit flags from an outer `make e2e`.
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
E2E=$REPO/scripts/e2e
PY=(python3 "$E2E/zwm_e2e.py")
FETCH=$REPO/scripts/fetch-debian-kernel.sh

PROG=e2e
. "$REPO/scripts/lib.sh"

ALL_CASES="bookworm-amd64 sid-amd64 sid-ppc64el trixie-ppc64el trixie-amd64 bookworm-i386 bookworm-ppc64el sid-arm64 sid-riscv64 sid-s390x negative negative-arm64"
# Each builds a whole kernel with clang (most of an hour on 2 cores), so
# only a run that names them pays for it.
BUILD_CASES="clang-amd64 clang-ppc64el"
# Kernels before the rules' newest fixes: 5.10, 6.1 and 6.12.94 (make e2e-old).
OLD_CASES="bullseye-amd64 bullseye-arm64 bookworm-arm64 bpo-arm64 s390x-empty"
cases=$ALL_CASES
work=${ZWM_E2E_WORK:-}
while [ $# -gt 0 ]; do
    # shellcheck disable=SC2086 # $cases: case names, split on purpose
    case "$1" in
        --cases) cases=${2//,/ }; shift 2;;
        --cases=*) cases=${1#--cases=}; cases=${cases//,/ }; shift;;
        --negative) cases="negative negative-arm64"; shift;;
        --no-negative) cases=$(printf '%s\n' $cases | grep -v '^negative' | tr '\n' ' '); shift;;
        --work) work=$2; shift 2;;
        *) arg_error "$1";;
    esac
done
for c in $cases; do
    case " $ALL_CASES $BUILD_CASES $OLD_CASES " in *" $c "*) ;; *) die "unknown case $c";; esac
done

# --- host tools ---------------------------------------------------------------
needs=("qemu-system-x86_64 qemu-system-x86" "cpio cpio" "xz xz-utils" "python3 python3")
case "$cases" in *ppc64el*) needs+=("qemu-system-ppc64 qemu-system-ppc");; esac
case "$cases" in *arm64*) needs+=("qemu-system-aarch64 qemu-system-arm");; esac
case "$cases" in *riscv64*) needs+=("qemu-system-riscv64 qemu-system-misc" "/usr/share/qemu/opensbi-riscv64-generic-fw_dynamic.bin qemu-system-data");; esac
case "$cases" in *s390x*) needs+=("qemu-system-s390x qemu-system-misc");; esac
case "$cases" in *i386*) needs+=("qemu-system-i386 qemu-system-x86");; esac
case "$cases" in *clang*) needs+=("modinfo kmod");; esac
missing_packages "${needs[@]}"
has_line insmod /bin/busybox --list || MISSING+=(busybox-static)
install_packages "${MISSING[@]}"
HOST_BUSYBOX=/bin/busybox

# --- the tool -------------------------------------------------------------------
# $ZWM if given; else target/release/zero-weak-mcount, brought up to date with
# `cargo build --release` (a no-op when it is) so that the sources are tested.
ZWM=$(find_tool "${ZWM:-}") || exit 1

work=$(work_dir "$work" /tmp/zwm-e2e.XXXXXX) || die "cannot make the work folder"
log "work folder: $work"
SUMMARY=$work/summary.tsv
printf 'case\tvariant\tkernel\tmodule\tmax_offset\tlines_before\tlines_after\tinvalid_before\tinvalid_after\tzeroed\tresult\tboot_s\tdefault_eq_kconfig\n' > "$SUMMARY"
declare -a FAILURES=()
declare -A CASE_TIME=() CASE_BUILD=()
NEG_STATUS=""

# --- how to process a module --------------------------------------------------
# process VARIANT IN OUT LOG — write the processed IN to OUT, the -v stderr to
# LOG.  IN is the decompressed module as shipped (still signed).
# Variants: tool-default, tool-kconfig (uses $KCONFIG), zero-extra.
ZERO_EXTRA=${ZWM_ZERO_EXTRA:-$REPO/target/release/examples/zero-extra}
process() {
    local variant=$1 in=$2 out=$3 logf=$4
    case "$variant" in
        tool-default)
            "$ZWM" -v --signed=strip -o "$out" "$in" 2>"$logf";;
        tool-kconfig)
            "$ZWM" -v --signed=strip --kconfig "$KCONFIG" -o "$out" "$in" 2>"$logf";;
        zero-extra)
            # The example takes a plain ELF: give it the stripped original.
            # It lists no entries, so LOG gets the real tool's -v report for
            # the same input (what the tool claims to zero) followed by the
            # example's own line; the one extra zeroed entry is then the
            # only difference the comparison can find.
            "${PY[@]}" prep "$in" "$out.in" 2>/dev/null &&
            "$ZWM" -v -o "$out.tool" "$out.in" 2>"$logf" &&
            "$ZERO_EXTRA" "$out.in" "$out" 2>>"$logf";;
        *) log "unknown variant $variant"; return 2;;
    esac
}

# Boot a module set.  boot_set ARCH KERNEL BUSYBOX OUTDIR MODULES...
# The guest (scripts/guest/run.sh, payload ftrace-report.sh) loads the
# modules in order and reports what ftrace made of them; OUTDIR/report.json
# holds the facts.  Returns the classification of zwm_e2e.py parse: 0 ok,
# 10 an insmod failed, 11 panic/oops, 12 timeout, 13 report incomplete,
# 2 host error.
boot_set() {
    local arch=$1 kernel=$2 bb=$3 out=$4 names=() m rc why timed=(); shift 4
    for m in "$@"; do names+=("$("${PY[@]}" modname "$m")") || return 2; done
    "$GUEST/run.sh" --arch "$arch" --kernel "$kernel" --busybox "$bb" --out "$out" \
        --payload "$GUEST/payload/ftrace-report.sh" "$@"
    rc=$?
    case $rc in 0) ;; 12) timed=(--timed-out);; *) return $rc;; esac
    why=$("${PY[@]}" parse "$out/console.log" "$out/report.json" ${timed[@]+"${timed[@]}"} "${names[@]}")
    rc=$?
    log "boot $arch ${names[*]}: $why (qemu rc $(cat "$out/qemu-rc"), $(cat "$out/boot-seconds")s) -> $out"
    if [ $rc != 0 ]; then
        log "last console lines:"
        tail -n 25 "$out/console.log" | sed 's/^/  | /' >&2
        [ -s "$out/qemu.stderr" ] && sed 's/^/  qemu: /' "$out/qemu.stderr" >&2
    fi
    return $rc
}

# find_in_root ROOT KVER REL... — first existing ROOT/{,usr/}REL (REL may hold
# KVER already); globs allowed
find_in_root() {
    local root=$1; shift 2
    local rel f
    for rel in "$@"; do
        for f in "$root"/$rel "$root"/usr/$rel; do
            [ -f "$f" ] && { printf '%s\n' "$f"; return 0; }
        done
    done
    return 1
}

# agreement SHIPPED — "yes" when the tool without a config would zero exactly
# the entries (section+offset) that it zeroes with --kconfig $KCONFIG, "no"
# with the difference on stderr, "-" when the case has no config.  Nothing
# is booted for this: the boots prove whichever variants the case runs.
agreement() {
    local in=$1 a b
    [ -n "${KCONFIG:-}" ] || { echo -; return 0; }
    a=$("$ZWM" --check -v --signed=strip "$in" 2>&1 | sed -n 's/^.*: \(zero\|drop\) \([^ ]*\) .*$/\2/p' | sort)
    b=$("$ZWM" --check -v --signed=strip --kconfig "$KCONFIG" "$in" 2>&1 | sed -n 's/^.*: \(zero\|drop\) \([^ ]*\) .*$/\2/p' | sort)
    if [ "$a" = "$b" ]; then echo yes; else
        echo no
        log "$in: default and --kconfig differ: $(diff <(echo "$b") <(echo "$a") | sed -n 's/^[<>] //p' | tr '\n' ' ')"
    fi
}

# run_variants CASE ARCH KERNEL BUSYBOX KVER VARIANTS -- MODULE...
# Boots the originals once, then each variant, and compares.
# For the 'zero-extra' variant the comparison is expected to fail.
# PATCH_SITES (comma-separated offsets from a function's symbol to its
# record ip) selects the containment comparison, NAMED=1 its form for
# kernels that list no record ips (before 6.5: dead records are the lines
# of a name beyond the module's functions of that name); NOINIT=1 boots copies whose
# init call is removed (zwm_e2e.py noinit), made after processing.
run_variants() {
    local case=$1 arch=$2 kernel=$3 bb=$4 kver=$5 variants=$6; shift 7
    local mods=("$@") cdir=$work/$case m name v
    mkdir -p "$cdir/shipped" "$cdir/orig"
    local origs=() names=()
    local -A agree=()
    for m in "${mods[@]}"; do
        name=$("${PY[@]}" modname "$m") || { FAILURES+=("$case: cannot read $m"); return 1; }
        names+=("$name")
        "${PY[@]}" decompress "$m" "$cdir/shipped/$name.ko" || return 1
        "${PY[@]}" prep "$m" "$cdir/orig/$name.ko" 2>>"$cdir/prep.log" || return 1
        if [ -n "${NOINIT:-}" ]; then
            "${PY[@]}" noinit "$cdir/orig/$name.ko" "$cdir/orig/$name.ko" || return 1
        fi
        origs+=("$cdir/orig/$name.ko")
        agree[$name]=$(agreement "$cdir/shipped/$name.ko")
    done
    local orc=0
    if [ -n "${REUSE_ORIG:-}" ] && [ -f "$REUSE_ORIG/report.json" ] &&
       cmp -s "$REUSE_ORIG/initrd/modules/order" <(printf '%s\n' "${names[@]}") &&
       [ "$(cat "$REUSE_ORIG/kernel-path" 2>/dev/null)" = "$kernel" ]; then
        log "$case: reusing the original boot in $REUSE_ORIG"
        rm -rf "$cdir/boot-orig"; cp -r "$REUSE_ORIG" "$cdir/boot-orig"
        orc=$(python3 -c 'import json,sys;print(json.load(open(sys.argv[1]))["exit"])' "$cdir/boot-orig/report.json")
    else
        log "$case: booting the original modules (${names[*]})"
        boot_set "$arch" "$kernel" "$bb" "$cdir/boot-orig" "${origs[@]}"
        orc=$?
        echo "$kernel" > "$cdir/boot-orig/kernel-path"
    fi
    if [ "$orc" != 0 ]; then
        FAILURES+=("$case: the ORIGINAL modules do not boot cleanly (boot exit $orc, see $cdir/boot-orig/console.log)")
        return 1
    fi
    for v in $variants; do
        local vdir=$cdir/$v procs=() ok=1
        mkdir -p "$vdir"
        for name in "${names[@]}"; do
            if ! process "$v" "$cdir/shipped/$name.ko" "$vdir/$name.ko" "$vdir/$name.log"; then
                FAILURES+=("$case/$v: processing $name failed: $(tail -n 3 "$vdir/$name.log" 2>/dev/null | tr '\n' ' ')")
                ok=0; continue
            fi
            "${PY[@]}" zeroed "$vdir/$name.log" > "$vdir/$name.zeroed"
            # A kernel newer than the rule table is processed with the newest
            # rules; the e2e is where that assumption meets a real kernel, so
            # it fails until someone reads the new source and raises
            # CHECKED_THROUGH (docs/rules.md, "Newer kernels").
            if grep -qF "is newer than" "$vdir/$name.log"; then
                FAILURES+=("$case/$v: $name: $(grep -F -m1 "is newer than" "$vdir/$name.log")")
                ok=0
            fi
            # --signed=strip drops the signature of a module it changes; one
            # with nothing to change comes out as it went in, still signed.
            if [ "$("${PY[@]}" sigstate "$vdir/$name.ko")" != unsigned ] &&
               ! cmp -s "$vdir/$name.ko" "$cdir/shipped/$name.ko"; then
                FAILURES+=("$case/$v: $name output was changed but still carries a signature")
                ok=0
            fi
            if [ "$v" != zero-extra ]; then
                # Idempotence: a second run finds nothing to zero.
                "$ZWM" -v -o "$vdir/$name.again.ko" "$vdir/$name.ko" 2>"$vdir/$name.again.log"
                local arc=$? again
                again=$("${PY[@]}" zeroed "$vdir/$name.again.log" | wc -l)
                if [ $arc != 0 ] || [ "$again" != 0 ]; then
                    FAILURES+=("$case/$v: second run on the processed $name: rc $arc, zeroed $again more (see $vdir/$name.again.log)")
                fi
            fi
            if [ -n "${NOINIT:-}" ]; then
                "${PY[@]}" noinit "$vdir/$name.ko" "$vdir/$name.noinit.ko" || { ok=0; continue; }
                procs+=("$vdir/$name.noinit.ko")
            else
                procs+=("$vdir/$name.ko")
            fi
        done
        [ $ok = 1 ] || continue
        log "$case/$v: booting the processed modules"
        boot_set "$arch" "$kernel" "$bb" "$vdir/boot" "${procs[@]}"
        local brc=$? secs
        secs=$(cat "$vdir/boot/boot-seconds" 2>/dev/null || echo '?')
        local neg_hit=0
        for name in "${names[@]}"; do
            local res crc
            if [ -n "${NAMED:-}" ]; then
                res=$("${PY[@]}" compare-named "$cdir/boot-orig/report.json" "$vdir/boot/report.json" \
                      "$name" "$vdir/$name.log" "$cdir/orig/$name.ko" 2>&1)
            elif [ -n "${PATCH_SITES:-}" ]; then
                res=$("${PY[@]}" compare-contained "$cdir/boot-orig/report.json" "$vdir/boot/report.json" \
                      "$name" "$vdir/$name.log" "$cdir/orig/$name.ko" "$vdir/$name.ko" "$PATCH_SITES" 2>&1)
            else
                res=$("${PY[@]}" compare "$cdir/boot-orig/report.json" "$vdir/boot/report.json" \
                      "$name" "$vdir/$name.zeroed" 2>&1)
            fi
            crc=$?
            echo "$res" > "$vdir/$name.compare.json"
            local row verdict
            row=$(python3 -c '
import json,sys
f=json.loads(sys.argv[1])
print("\t".join(str(f.get(k,"?")) for k in ("lines_before","lines_after","invalid_before","invalid_after","zeroed")))
' "$res" 2>/dev/null || printf '?\t?\t?\t?\t?')
            if [ "$v" = zero-extra ]; then
                if [ $crc != 0 ] && grep -q 'valid lines differ: 1 missing after processing' <<<"$res"; then
                    verdict="FAIL-as-expected"; neg_hit=1
                else
                    verdict="NOT-DETECTED"
                fi
            else
                if [ $crc = 0 ] && [ $brc = 0 ]; then verdict=PASS; else verdict=FAIL; fi
            fi
            local maxoff
            # "in+N": the containment rule, N bytes allowed before a function.
            maxoff=$(sed -n -e 's/.*max offset \([0-9]\{1,\}\).*/\1/p' \
                -e 's/.*inside a function symbol, up to \([0-9]\{1,\}\) bytes.*/in+\1/p' "$vdir/$name.log" | tail -n 1)
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$case" "$v" "$kver" "$name" "${maxoff:--}" "$row" "$verdict" "$secs" "${agree[$name]:--}" >> "$SUMMARY"
            if [ "$verdict" = FAIL ]; then
                local probs
                probs=$(python3 -c 'import json,sys; print("; ".join(json.loads(sys.argv[1])["problems"]))' "$res" 2>/dev/null || echo "$res")
                [ $brc != 0 ] && probs="boot exit $brc ($(python3 -c 'import json,sys;print(json.load(open(sys.argv[1]))["why"])' "$vdir/boot/report.json" 2>/dev/null)); $probs"
                FAILURES+=("$case/$v/$name: $probs")
            fi
            if [ "$v" = zero-extra ]; then
                log "negative control $name: $(python3 -c 'import json,sys; print("; ".join(json.loads(sys.argv[1])["problems"]) or "comparison PASSED")' "$res" 2>/dev/null)"
            fi
        done
        if [ "$v" = zero-extra ]; then
            if [ $neg_hit = 1 ]; then NEG_STATUS+="$case detected; "
            else NEG_STATUS+="$case NOT detected; "
                FAILURES+=("negative control $case: the extra zeroed valid entry was NOT detected by the comparison")
            fi
        fi
    done
}

# --- cases ----------------------------------------------------------------------
case_bookworm_amd64() {
    local root kver kernel cfg
    root=$("$FETCH" bookworm amd64) || { FAILURES+=("bookworm-amd64: fetch failed"); return; }
    kver=$(cat "$root/../kver")
    kernel=$(find_in_root "$root" "$kver" "boot/vmlinuz-$kver" "lib/modules/$kver/vmlinuz") ||
        { FAILURES+=("bookworm-amd64: no kernel image in $root"); return; }
    cfg=$(find_in_root "$root" "$kver" "boot/config-$kver" "lib/modules/$kver/config") ||
        { FAILURES+=("bookworm-amd64: no kernel config in $root"); return; }
    local bdir=$work/bookworm-amd64/build
    mkdir -p "$bdir"
    log "bookworm-amd64: building testdata/zwm_test for $kver"
    "$REPO/scripts/build-testdata.sh" --kver "$kver" --out "$bdir" >&2 ||
        { FAILURES+=("bookworm-amd64: scripts/build-testdata.sh --kver $kver failed"); return; }
    # Debian's own irqbypass.ko and kvm.ko too: 6.1 has no IBT, so the
    # kernel's max offset is 0 where the default assumes 4.
    local irqb kvm
    irqb=$(find_in_root "$root" "$kver" "lib/modules/$kver/kernel/virt/lib/irqbypass.ko*") &&
    kvm=$(find_in_root "$root" "$kver" "lib/modules/$kver/kernel/arch/x86/kvm/kvm.ko*") ||
        { FAILURES+=("bookworm-amd64: irqbypass.ko/kvm.ko not found under $root"); return; }
    KCONFIG=$cfg run_variants bookworm-amd64 x86_64 "$kernel" "$HOST_BUSYBOX" "$kver" \
        "tool-kconfig tool-default" -- "$bdir/zwm_test.ko" "$irqb" "$kvm"
}

sid_amd64_mods() {
    local root=$1 kver=$2
    find_in_root "$root" "$kver" "lib/modules/$kver/kernel/virt/lib/irqbypass.ko*" &&
    find_in_root "$root" "$kver" "lib/modules/$kver/kernel/arch/x86/kvm/kvm.ko*"
}
case_sid_amd64() {   # $1: variants
    local root kver kernel mods
    root=$("$FETCH" sid amd64) || { FAILURES+=("sid-amd64: fetch failed"); return; }
    kver=$(cat "$root/../kver")
    kernel=$(find_in_root "$root" "$kver" "boot/vmlinuz-$kver" "lib/modules/$kver/vmlinuz") ||
        { FAILURES+=("sid-amd64: no kernel image in $root"); return; }
    mapfile -t mods < <(sid_amd64_mods "$root" "$kver")
    [ ${#mods[@]} = 2 ] || { FAILURES+=("sid-amd64: irqbypass.ko/kvm.ko not found under $root"); return; }
    # The config only feeds the default-vs---kconfig agreement column.
    KCONFIG=$(find_in_root "$root" "$kver" "boot/config-$kver" "lib/modules/$kver/config") \
    run_variants "$2" x86_64 "$kernel" "$HOST_BUSYBOX" "$kver" "$1" -- "${mods[@]}"
}

case_sid_ppc64el() {
    local root kver kernel bb mod
    root=$("$FETCH" sid ppc64el busybox-static) || { FAILURES+=("sid-ppc64el: fetch failed"); return; }
    kver=$(cat "$root/../kver")
    kernel=$(find_in_root "$root" "$kver" "boot/vmlinux-$kver" "boot/vmlinuz-$kver" "lib/modules/$kver/vmlinuz" "lib/modules/$kver/vmlinux") ||
        { FAILURES+=("sid-ppc64el: no kernel image in $root"); return; }
    bb=$(find_in_root "$root" "$kver" bin/busybox) ||
        { FAILURES+=("sid-ppc64el: no busybox in $root"); return; }
    mod=$(find_in_root "$root" "$kver" "lib/modules/$kver/kernel/arch/powerpc/kvm/kvm.ko*") ||
        { FAILURES+=("sid-ppc64el: kvm.ko not found under $root"); return; }
    KCONFIG=$(find_in_root "$root" "$kver" "boot/config-$kver" "lib/modules/$kver/config") \
    run_variants sid-ppc64el ppc64le "$kernel" "$bb" "$kver" tool-default -- "$mod"
}

# debian_case CASE SUITE DEBARCH ARCH VARIANTS -- MODULE...
# Boots Debian SUITE's kernel for DEBARCH (the newest build the mirror
# serves, see fetch-debian-kernel.sh) with the modules given as paths under
# lib/modules/KVER/kernel/ without the .ko suffix, loaded in that order.  The
# package's own config is the --kconfig of the tool-kconfig variant and of
# the agreement column.  Non-x86_64 guests get Debian's busybox-static.
debian_case() {
    local case=$1 suite=$2 debarch=$3 arch=$4 variants=$5; shift 6
    local root kver kernel cfg bb rel m mods=() extra=()
    [ "$arch" = x86_64 ] || extra=(busybox-static)
    root=$("$FETCH" "$suite" "$debarch" ${extra[@]+"${extra[@]}"}) ||
        { FAILURES+=("$case: fetch failed"); return; }
    kver=$(cat "$root/../kver")
    kernel=$(find_in_root "$root" "$kver" "boot/vmlinuz-$kver" "boot/vmlinux-$kver" "lib/modules/$kver/vmlinuz") ||
        { FAILURES+=("$case: no kernel image in $root"); return; }
    cfg=$(find_in_root "$root" "$kver" "boot/config-$kver" "lib/modules/$kver/config") ||
        { FAILURES+=("$case: no kernel config in $root"); return; }
    if [ "$arch" = x86_64 ]; then
        bb=$HOST_BUSYBOX
    else
        bb=$(find_in_root "$root" "$kver" bin/busybox) ||
            { FAILURES+=("$case: no busybox in $root"); return; }
    fi
    for rel in "$@"; do
        m=$(find_in_root "$root" "$kver" "lib/modules/$kver/kernel/$rel.ko" "lib/modules/$kver/kernel/$rel.ko.*") ||
            { FAILURES+=("$case: $rel.ko not found under $root"); return; }
        mods+=("$m")
    done
    log "$case: kernel $kver"
    KCONFIG=$cfg run_variants "$case" "$arch" "$kernel" "$bb" "$kver" "$variants" -- "${mods[@]}"
}

# Debian sid's kernels of the arches without a max offset: arm64, riscv64,
# s390x, compared by where each record's ip lies (PATCH_SITES: the offsets
# from a function's symbol to its record ip, from each arch's
# ftrace_call_adjust() and CC_FLAGS_FTRACE in 7.2; see docs/e2e.md).
ARM64_MODS=(drivers/net/ethernet/marvell/octeontx2/af/rvu_mbox
            drivers/net/ethernet/marvell/octeontx2/nic/otx2_ptp drivers/net/macsec
            drivers/net/ethernet/marvell/octeontx2/nic/rvu_nicpf)
case_sid_arm64() {   # $1: variants, $2: case name
    PATCH_SITES=4,8 debian_case "$2" sid arm64 aarch64 "$1" -- "${ARM64_MODS[@]}"
}
case_sid_riscv64() {
    PATCH_SITES=4 debian_case sid-riscv64 sid riscv64 riscv64 tool-default -- arch/riscv/kvm/kvm
}
case_sid_s390x() {
    NOINIT=1 PATCH_SITES=0 debian_case sid-s390x sid s390x s390x tool-default -- arch/s390/kvm/kvm
}

# Why a drop never empties an s390 table: s390's module_finalize() sizes its
# hotpatch trampolines from __mcount_loc, and a size of 0 fails the load.
# The processed module (a table the tool left whole) must load; the copy
# with the table emptied must not.
S390_EMPTY_MOD=drivers/net/dummy
case_s390x_empty() {
    local root kver kernel bb m cdir=$work/s390x-empty name
    root=$("$FETCH" sid s390x busybox-static) || { FAILURES+=("s390x-empty: fetch failed"); return; }
    kver=$(cat "$root/../kver")
    kernel=$(find_in_root "$root" "$kver" "boot/vmlinuz-$kver" "lib/modules/$kver/vmlinuz") || { FAILURES+=("s390x-empty: no kernel"); return; }
    bb=$(find_in_root "$root" "$kver" bin/busybox) || { FAILURES+=("s390x-empty: no busybox"); return; }
    m=$(find_in_root "$root" "$kver" "lib/modules/$kver/kernel/$S390_EMPTY_MOD.ko" "lib/modules/$kver/kernel/$S390_EMPTY_MOD.ko.*") ||
        { FAILURES+=("s390x-empty: $S390_EMPTY_MOD.ko not found"); return; }
    mkdir -p "$cdir"
    name=$("${PY[@]}" modname "$m")
    "${PY[@]}" prep "$m" "$cdir/$name.in.ko" 2>/dev/null &&
    "$ZWM" -v -o "$cdir/$name.ko" "$cdir/$name.in.ko" 2>"$cdir/$name.log" &&
    "${PY[@]}" empty-table "$cdir/$name.ko" "$cdir/$name.empty.ko" ||
        { FAILURES+=("s390x-empty: preparing $name failed"); return; }
    local rc_ok rc_empty
    boot_set s390x "$kernel" "$bb" "$cdir/boot-processed" "$cdir/$name.ko"; rc_ok=$?
    mkdir -p "$cdir/empty"; cp "$cdir/$name.empty.ko" "$cdir/empty/$name.ko"
    boot_set s390x "$kernel" "$bb" "$cdir/boot-empty" "$cdir/empty/$name.ko"; rc_empty=$?
    local lines
    lines=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(len(r["aff"].get(sys.argv[2], [])))' \
        "$cdir/boot-processed/report.json" "$name" 2>/dev/null || echo '?')
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' s390x-empty processed "$kver" "$name" - "$lines" "$lines" - - 0 \
        "$([ $rc_ok = 0 ] && echo PASS || echo FAIL)" "$(cat "$cdir/boot-processed/boot-seconds" 2>/dev/null)" - >> "$SUMMARY"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' s390x-empty emptied "$kver" "$name" - - - - - all \
        "$([ $rc_empty = 10 ] && echo FAIL-as-expected || echo NOT-DETECTED)" "$(cat "$cdir/boot-empty/boot-seconds" 2>/dev/null)" - >> "$SUMMARY"
    [ $rc_ok = 0 ] || FAILURES+=("s390x-empty: the processed $name does not boot cleanly (boot.sh exit $rc_ok, $cdir/boot-processed/console.log)")
    if [ $rc_empty = 10 ] && grep -aq "can't insert.*Cannot allocate memory" "$cdir/boot-empty/console.log"; then
        NEG_STATUS+="s390x-empty detected; "
    else FAILURES+=("s390x-empty: $name with an empty __mcount_loc did not fail to load (boot.sh exit $rc_empty)"); fi
}

build_zero_extra() {
    [ -n "${ZWM_ZERO_EXTRA:-}" ] && return 0
    log "negative: cargo build --release --example zero-extra"
    (cd "$REPO" && cargo build --release -q --example zero-extra >&2) && return 0
    NEG_STATUS+="NOT run (no zero-extra example); "
    FAILURES+=("negative control: 'cargo build --release --example zero-extra' failed; the e2e cannot show it has teeth")
    return 1
}
case_negative() {
    build_zero_extra || return
    REUSE_ORIG=$work/sid-amd64/boot-orig case_sid_amd64 zero-extra negative
}
case_negative_arm64() {
    build_zero_extra || return
    REUSE_ORIG=$work/sid-arm64/boot-orig case_sid_arm64 zero-extra negative-arm64
}

# A kvm.ko built by clang against a kernel built by clang: the kernel is our
# own build, so its .config is the --kconfig, and the negative control runs
# on the same module, since no Debian module is built by clang.
case_clang() { # CASE ARCH
    local case=$1 arch=$2 obj kver kernel bb mods
    obj=$("$REPO/scripts/build-clang-kernel.sh" --arch "$arch") ||
        { FAILURES+=("$case: scripts/build-clang-kernel.sh --arch $arch failed"); return; }
    CASE_BUILD[$case]=$(cat "$obj/build-seconds")
    kver=$(cat "$obj/include/config/kernel.release")
    if [ "$arch" = x86_64 ]; then
        kernel=$obj/arch/x86/boot/bzImage bb=$HOST_BUSYBOX
        mods=("$obj/virt/lib/irqbypass.ko" "$obj/arch/x86/kvm/kvm.ko")
    else
        local root
        root=$("$FETCH" sid ppc64el busybox-static) || { FAILURES+=("$case: fetching busybox-static:ppc64el failed"); return; }
        kernel=$obj/vmlinux
        bb=$(find_in_root "$root" "" bin/busybox) || { FAILURES+=("$case: no busybox in $root"); return; }
        mods=("$obj/arch/powerpc/kvm/kvm.ko")
    fi
    # clang 19 builds ppc64le with plain -pg: that kernel checks nothing, the
    # tool must leave kvm.ko alone, and zero-extra (which only acts where
    # the kernel checks) has nothing to act on. The x86_64 case keeps the
    # control.
    local variants="tool-kconfig tool-default"
    if [ "$arch" = x86_64 ]; then
        build_zero_extra || return
        variants+=" zero-extra"
    fi
    KCONFIG=$obj/.config run_variants "$case" "$arch" "$kernel" "$bb" "$kver" "$variants" -- "${mods[@]}"
}

t_all=$(date +%s)
for c in $cases; do
    t0=$(date +%s)
    log "=== case $c"
    case "$c" in
        bookworm-amd64) case_bookworm_amd64;;
        sid-amd64) case_sid_amd64 tool-default sid-amd64;;
        sid-ppc64el) case_sid_ppc64el;;
        trixie-ppc64el)
            debian_case trixie-ppc64el trixie ppc64el ppc64le "tool-kconfig tool-default" -- \
                arch/powerpc/kvm/kvm;;
        trixie-amd64)
            debian_case trixie-amd64 trixie amd64 x86_64 tool-default -- \
                virt/lib/irqbypass arch/x86/kvm/kvm \
                drivers/infiniband/core/ib_core drivers/infiniband/core/ib_uverbs \
                drivers/infiniband/sw/rdmavt/rdmavt drivers/dca/dca \
                drivers/infiniband/hw/qib/ib_qib;;
        bookworm-i386)
            debian_case bookworm-i386 bookworm i386 i386 tool-default -- \
                virt/lib/irqbypass arch/x86/kvm/kvm;;
        bookworm-ppc64el)
            build_zero_extra
            NAMED=1 debian_case bookworm-ppc64el bookworm ppc64el ppc64le \
                "tool-default zero-extra" -- arch/powerpc/kvm/kvm;;
        bullseye-amd64)
            build_zero_extra
            ZWM_DEBIAN_SECURITY=none NAMED=1 debian_case bullseye-amd64 bullseye amd64 x86_64 \
                "tool-default zero-extra" -- virt/lib/irqbypass arch/x86/kvm/kvm \
                drivers/infiniband/core/ib_core drivers/infiniband/core/ib_uverbs \
                drivers/infiniband/sw/rdmavt/rdmavt drivers/dca/dca drivers/infiniband/hw/qib/ib_qib;;
        bullseye-arm64)
            build_zero_extra
            ZWM_DEBIAN_SECURITY=none NAMED=1 debian_case bullseye-arm64 bullseye arm64 aarch64 \
                "tool-default zero-extra" -- drivers/net/macsec;;
        bookworm-arm64)
            build_zero_extra
            NAMED=1 debian_case bookworm-arm64 bookworm arm64 aarch64 \
                "tool-default zero-extra" -- drivers/net/macsec;;
        bpo-arm64)
            build_zero_extra
            ZWM_KERNEL_IMAGE=linux-image-6.12.94+deb12-arm64 PATCH_SITES=4,8 \
                debian_case bpo-arm64 bookworm-backports arm64 aarch64 "tool-default zero-extra" -- "${ARM64_MODS[@]}";;
        sid-arm64) case_sid_arm64 tool-default sid-arm64;;
        sid-riscv64) case_sid_riscv64;;
        sid-s390x) case_sid_s390x;;
        negative) case_negative;;
        negative-arm64) case_negative_arm64;;
        s390x-empty) case_s390x_empty;;
        clang-amd64) case_clang clang-amd64 x86_64;;
        clang-ppc64el) case_clang clang-ppc64el ppc64le;;
    esac
    CASE_TIME[$c]=$(( $(date +%s) - t0 ))
done
total=$(( $(date +%s) - t_all ))

# --- summary ----------------------------------------------------------------------
{
    echo
    echo "zero-weak-mcount e2e summary (work folder $work)"
    python3 - "$SUMMARY" "$(for c in $cases; do printf '%s=%s ' "$c" "${CASE_TIME[$c]:-?}"; done)" <<'PYEOF'
import sys, csv
rows = list(csv.reader(open(sys.argv[1]), delimiter="\t"))
times = dict(kv.split("=") for kv in sys.argv[2].split())
hdr = ["case", "variant", "kernel", "module", "max off", "lines before", "lines after",
       "invalid before", "invalid after", "zeroed", "result", "boot s", "default=kconfig",
       "case wall s"]
body = [r + [times.get(r[0], "?")] for r in rows[1:]]
w = [max(len(str(x)) for x in col) for col in zip(hdr, *body)] if body else [len(h) for h in hdr]
fmt = "  ".join("{:<%d}" % n for n in w)
print(fmt.format(*hdr))
for r in body:
    print(fmt.format(*r))
PYEOF
    echo "negative control: ${NEG_STATUS:-not run}"
    for c in "${!CASE_BUILD[@]}"; do echo "$c: kernel build ${CASE_BUILD[$c]}s (scripts/build-clang-kernel.sh)"; done
    echo "total wall time: ${total}s"
} | tee "$work/summary.txt"

if [ ${#FAILURES[@]} -gt 0 ]; then
    echo "FAILED:" >&2
    printf '  - %s\n' "${FAILURES[@]}" >&2
    echo "e2e: FAIL (${#FAILURES[@]} problem(s)); logs in $work" >&2
    exit 1
fi
case " $cases " in
    *" negative"*|*clang*) ;;
    *) log "note: negative control not run (--no-negative / --cases)";;
esac
echo "e2e: PASS; logs in $work" >&2
exit 0
