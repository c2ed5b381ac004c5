#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# kernel-selftests.sh — the kernel's own ftrace and livepatch selftests on
# the stock and the series kernel (docs/kernel-e2e.md, "The kernel's own
# tests").
#
#   scripts/kernel-selftests.sh [--work DIR] [--forms "stock processed unchecked stripped"]
#                               [--suites "preload ftrace livepatch probes"] [--jobs N]
#                               [--module-tests-only "FORM..." [--cases "TEST..."]] [--no-build] [--report-only]
#                               [--weak "stock lookup stock-processed series unsupported unresolved"]
#                               [--arch x86_64|aarch64]
#
# The kernels are kernel-e2e's x86_64 pair (`kernel-e2e.sh --build-only`),
# whose one config has what both suites need.  Each boot (one vCPU, TCG)
# gets a modprobe tree /lib/modules/KVER (modules_install and depmod) in
# one module form, and runs, in that order (scripts/guest/payload/selftests.sh):
#   preload    modprobe kvm (and so irqbypass), so that a module with
#              overridden weak functions has its records in play;
#   ftrace     tools/testing/selftests/ftrace/ftracetest, whose module tests
#              modprobe trace-printk, trace-events-sample, ftrace-direct*;
#   livepatch  every tools/testing/selftests/livepatch/test-*.sh, by
#              kselftest's runner (run_kselftest.sh -c livepatch), under
#              Debian's bash-static, with its test modules in the same form;
#   probes     a kprobe, an fprobe and function_graph on a function of
#              trace-events-sample, in its processed and unchecked forms
#              (in the stripped forms: stripped, with and without the tool).
# Forms: stock (the stock kernel and its modules as built), stock-stripped
# (the same, strip --strip-unneeded: static functions lose their symbols,
# so the module tests that name one fail, as they must), and on the series
# kernel: unchecked (as built, without the tool; relinked without
# the hook where a series still has one), processed (every module run
# through the tool) and stripped (unchecked, then strip --strip-unneeded:
# static functions lose their symbols).  Both suites print KTAP (ftracetest
# -K; the runner).  scripts/kernel-selftests/report.py compares
# every verdict, by test name, of each series form with stock's (stripped
# with stock-stripped's) and writes
# WORK/report.md.
#
# --weak CASE...: the series' selftest (test_ftrace_weak.ko and ftracetest's
# func_dead_weak_module.tc), the module built against each kernel, one boot
# per case: stock, lookup (stock with kernel/0001 alone), stock-processed
# (the module through the tool), series, unsupported (a notrace function
# between the function before and the weak body) and unresolved (the
# module cut short); report.py --weak says what each must give (WORK/weak.md).  First, `make
# install` of the series' ftrace selftests must pass without KDIR, and fail
# with stock's lib.mk.  Default: all of them; --weak "" runs none; --forms ""
# runs only them.  --arch aarch64: kernel-e2e's aarch64 pair, --weak alone
# (busybox userland); WORK gets -aarch64 appended.
# --module-tests-only FORM...: in those forms ftracetest runs only its
# module tests (MODULE_TESTS below), for time: a whole ftracetest run takes
# most of an hour of TCG.  --cases TEST... runs those ftracetest cases there
# instead: to boot a case again whose verdict differed between the kernels,
# and see whether it follows the kernel or the host's load.
# --jobs N boots N guests at once (default 1: every boot has a host core to
# itself, as the timing-sensitive tests expect); --no-build boots the
# kernels as they are, without kernel-e2e.sh --build-only (while another job
# holds a tree); --report-only judges the boots of an earlier run again
# (the --weak cases' too, where they booted).
# Only the kernels the forms name are staged.
# Default WORK ${ZWM_CACHE:-~/.cache/zero-weak-mcount}/kernel-selftests.
# Needs what kernel-e2e.sh needs, and bash-static, libc6-dev, kmod and
# procps (installed when missing).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HERE=$REPO/scripts/kernel-selftests
PROG=kernel-selftests DIE_STATUS=2
. "$REPO/scripts/lib.sh"

cache=${ZWM_CACHE:-$HOME/.cache/zero-weak-mcount}
work=$cache/kernel-selftests
forms="stock stock-stripped processed unchecked stripped"
suites="preload ftrace livepatch probes"
jobs=1 report_only=0 build=1 subset_forms='' weak=default arch=x86_64
# The ftracetest cases that load modules (modprobe of the sample modules).
MODULE_TESTS="test.d/ftrace/func_mod_trace.tc test.d/kprobe/kprobe_module.tc test.d/event/event-mod.tc
 test.d/event/trace_printk.tc test.d/dynevent/add_remove_fprobe_module.tc
 test.d/dynevent/add_remove_tprobe_module.tc test.d/direct"
while [ $# -gt 0 ]; do
    case "$1" in
        --work) work=$2; shift 2;;
        --forms) forms=$2; shift 2;;
        --suites) suites=$2; shift 2;;
        --jobs) jobs=$2; shift 2;;
        --module-tests-only) subset_forms=$2; shift 2;;
        --cases) MODULE_TESTS=$2; shift 2;;
        --weak) weak=$2; shift 2;;
        --arch) arch=$2; shift 2;;
        --report-only) report_only=1; shift;;
        --no-build) build=0; shift;;
        *) arg_error "$1";;
    esac
done
[ "$arch" = x86_64 ] || { work=$work-$arch; forms=''; }
[ "$weak" != default ] || weak="stock lookup stock-processed series unsupported unresolved"
work=$(work_dir "$work" "") || die "cannot make $work"
# weak_report: report.py's judgement of the --weak boots there are.
weak_report() {
    local c dirs=()
    for c in $weak; do [ ! -d "$work/boots/weak-$c" ] || dirs+=("$work/boots/weak-$c"); done
    [ ${#dirs[@]} -eq 0 ] || python3 "$HERE/report.py" --weak "$work/weak.md" "${dirs[@]}"
}
if [ $report_only = 1 ]; then
    rc=0
    weak_report || rc=1
    # shellcheck disable=SC2046 # $forms: form names, a path each, without spaces
    [ -z "$forms" ] || python3 "$HERE/report.py" "$work/report.md" $(for f in $forms; do echo "$work/boots/$f"; done) || rc=1
    exit $rc
fi
missing_packages "/bin/bash-static bash-static" "/usr/lib/x86_64-linux-gnu/libc.a libc6-dev" "depmod kmod" "rsync rsync" \
    "/usr/sbin/sysctl procps" "/usr/bin/gawk gawk" "/usr/bin/readelf binutils"
install_packages "${MISSING[@]}"

e2e=$cache/kernel-e2e
[ "$arch" = x86_64 ] || e2e=$e2e-$arch
[ $build = 0 ] || "$REPO/scripts/kernel-e2e.sh" --arch "$arch" --build-only || die "kernel-e2e.sh --build-only failed"
image=$("$GUEST/run.sh" --image "$arch")
read -r -a mkv < "$e2e/make-vars"
ZWM=$(find_tool "${ZWM:-}") || exit 2
kver=$(cat "$e2e/obj-series/include/config/kernel.release")
[ "$kver" = "$(cat "$e2e/obj-stock/include/config/kernel.release")" ] || die "the two kernels' releases differ"
tests=$e2e/src-stock/tools/testing/selftests
series_source  # PATCHES: the series, whose selftest weak_tree applies

# --- module trees --------------------------------------------------------------------
# stage KERNEL: modules_install of the build, and the livepatch test modules
# built against it without the tool (so they come out unchecked).
stage() {
    local k=$1 obj=$e2e/obj-$1 s=$work/stage-$1
    rm -rf "$s" "$work/klp-$k"
    kernel_make "$s.log" -C "$e2e/src-$k" O="$obj" INSTALL_MOD_PATH="$s" modules_install ||
        die "modules_install of the $k kernel failed"
    # Its build and source links name host folders: in the guest they
    # dangle, and the livepatch suite, which wants a build folder, skips.
    rm -f "$s"/lib/modules/*/build "$s"/lib/modules/*/source
    cp -r "$tests/livepatch/test_modules" "$work/klp-$k"
    build_kernel "the livepatch test modules against the $k kernel" "$work/klp-$k.log" \
        -C "$e2e/src-$k" O="$obj" M="$work/klp-$k" modules
}
# form_tree FORM [KERNEL]: KERNEL's (default series) modprobe tree and
# livepatch test modules in FORM.
form_tree() {
    local form=$1 k=${2:-series} t=$work/tree-$1 ko rel u
    local obj=$e2e/obj-$k
    [ "$k" = series ] || t=$work/tree-$k-$form
    rm -rf "$t"; cp -a "$work/stage-$k" "$t"
    mkdir -p "$t/selftests/livepatch/test_modules"
    cp "$work/klp-$k"/*.ko "$t/selftests/livepatch/test_modules/"
    while read -r ko; do
        rel=${ko#"$t/lib/modules/$kver/kernel/"}
        case "$ko" in */test_modules/*) u=$ko.unchecked; cp "$ko" "$u";;
            *) u=$ko.unchecked; unhooked "$obj" "$rel" "$u";; esac
        case "$form" in
            unchecked) mv "$u" "$ko";;
            stripped) strip --strip-unneeded -o "$ko" "$u"; rm -f "$u";;
            processed)
                "$ZWM" --kconfig "$obj/include/config/auto.conf" -o "$ko" "$u" 2>>"$t.tool.log" ||
                    die "the tool failed on $rel (see $t.tool.log)"
                rm -f "$u";;
        esac
    done < <(find "$t/lib/modules/$kver/kernel" "$t/selftests/livepatch/test_modules" -name '*.ko')
}
case " $forms " in *" stock "*|*" stock-stripped "*) stage stock;; esac
for f in $forms; do case "$f" in stock*) ;; *) stage series; break;; esac; done
for f in $forms; do
    case "$f" in
        stock) t=$work/tree-stock; rm -rf "$t"; cp -a "$work/stage-stock" "$t"
               mkdir -p "$t/selftests/livepatch/test_modules"
               cp "$work"/klp-stock/*.ko "$t/selftests/livepatch/test_modules/";;
        stock-stripped) form_tree stripped stock;;
        processed|unchecked|stripped) form_tree "$f";;
        *) die "unknown form $f";;
    esac
    depmod -b "$work/tree-$f" "$kver" || die "depmod for $f failed"
done
# The probes load trace-events-sample in two forms by hand.  The stock
# forms and stripped take the module as their tree has it (as built, or
# stripped) and the tool's output of it, so that the two stripped forms
# probe the same bytes on their two kernels.
for f in $forms; do
    t=$work/tree-$f
    mkdir -p "$t/probes"
    k=series; case "$f" in stock*) k=stock;; esac
    for p in processed unchecked; do
        mkdir -p "$t/probes/$p"
        if [ $k = stock ] || [ "$f" = stripped ]; then
            sample=$t/lib/modules/$kver/kernel/samples/trace_events/trace-events-sample.ko
            if [ $p = processed ]; then
                "$ZWM" --kconfig "$e2e/obj-$k/include/config/auto.conf" -o "$t/probes/$p/trace-events-sample.ko" "$sample" ||
                    die "the tool failed on trace-events-sample.ko"
            else
                cp "$sample" "$t/probes/$p/"
            fi
        else
            cp "$work/tree-$p/lib/modules/$kver/kernel/samples/trace_events/trace-events-sample.ko" "$t/probes/$p/" 2>/dev/null ||
                { rm -rf "$t/probes/$p"; log "probes: no $p form built (add it to --forms)"; }
        fi
    done
done
# The two programs the suites run, static for a guest with no libc.
gcc -static -O2 -o "$work/test_klp-call_getpid" "$tests/livepatch/test_klp-call_getpid.c" ||
    die "building test_klp-call_getpid failed"
rm -rf "$work/ftrace"; cp -r "$tests/ftrace" "$work/ftrace"
gcc -static -O2 -o "$work/ftrace/poll" "$tests/ftrace/poll.c" || die "building ftrace's poll failed"
# Debian's own programs where the suites depend on their behaviour or
# wording, with the libraries they link: kmod (the livepatch tests compare
# insmod's messages with kmod's, and busybox's insmod retries a refused
# finit_module() with init_module(), so the kernel refuses the module
# twice and logs it twice), procps' sysctl (--values, and its error
# wording), coreutils' stat (--format) and date (the tests mark the kernel
# log with --rfc-3339=ns and look for that mark again: busybox's has no
# nanoseconds), libc's getconf (_NPROCESSORS_ONLN), and for ftracetest
# what this busybox lacks: nice (the onchange and snapshot histogram
# actions), chrt (the wakeup tracers), readelf (uprobe events) and GNU awk
# as awk (trace_marker_raw needs strtonum).  /init's busybox --install
# leaves programs already in /bin alone.
ul=$work/userland
rm -rf "$ul"; mkdir -p "$ul/bin"
for p in /usr/bin/kmod /usr/sbin/sysctl /usr/bin/stat /usr/bin/date /usr/bin/getconf \
         /usr/bin/nice /usr/bin/chrt /usr/bin/readelf /usr/bin/gawk; do
    [ -x "$p" ] || die "no $p"
    cp "$p" "$ul/bin/"
    for l in $(ldd "$p" | grep -o '/[^ ]*'); do
        [ -e "$ul$l" ] || { mkdir -p "$ul$(dirname "$l")"; cp -L "$l" "$ul$l"; }
    done
done
for n in insmod rmmod modprobe lsmod modinfo depmod; do ln -s kmod "$ul/bin/$n"; done
ln -s gawk "$ul/bin/awk"

# --- boots -----------------------------------------------------------------------------
boot() { # FORM
    local f=$1 k=series out=$work/boots/$1
    case "$f" in stock*) k=stock;; esac
    rm -rf "$out"; mkdir -p "$out"
    echo "$k" > "$out/kernel"; echo "$f" > "$out/form"
    # shellcheck disable=SC2086 # echo joins the test names into one line
    printf 'SUITES="%s"\nPRELOAD=kvm\nFTRACE_TESTS="%s"\n' "$suites" \
        "$(case " $subset_forms " in *" $f "*) echo $MODULE_TESTS;; esac)" > "$out/selftests.conf"
    log "booting the $k kernel with the $f modules ($suites)"
    # The livepatch suite as kselftest installs it, run by its own runner:
    # run_kselftest.sh, kselftest/ and the list of the suite's tests.
    local adds=() s
    for s in "$tests"/livepatch/test-*.sh "$tests/livepatch/functions.sh" "$tests/livepatch/settings"; do
        adds+=(--add "$s=selftests/livepatch/$(basename "$s")")
    done
    for s in "$tests"/livepatch/test-*.sh; do echo "livepatch:${s##*/}"; done > "$out/kselftest-list.txt"
    adds+=(--add "$tests/run_kselftest.sh=selftests/run_kselftest.sh" --add "$tests/kselftest=selftests/kselftest"
           --add "$out/kselftest-list.txt=selftests/kselftest-list.txt")
    # 3 h: on a loaded host (load 12 on 2 cores, 2026-12-03) ftracetest's
    # module tests alone took 25 min, five times their time on an idle one.
    "$GUEST/run.sh" --arch x86_64 --kernel "$e2e/obj-$k/arch/x86/boot/bzImage" --out "$out" \
        --mem 2048 --timeout 10800 --payload "$GUEST/payload/selftests.sh" \
        --tree "$work/tree-$f" --add "$out/selftests.conf=selftests.conf" \
        --add "$work/ftrace=selftests/ftrace" "${adds[@]}" \
        --add "$work/test_klp-call_getpid=selftests/livepatch/test_klp-call_getpid" \
        --add "/bin/bash-static=bin/bash" --tree "$ul" ||
        log "warning: the guest did not power off in time ($out)"
    log "$f: booted in $(cat "$out/boot-seconds") s"
}
# --- the series' own selftest (--weak) -------------------------------------------------
# weak_tree KERNEL [DIR]: the ftrace selftests, stock's with the series'
# patches to them applied (so a changed test needs no kernel build), with
# test_ftrace_weak.ko built against KERNEL by its own Makefile (which finds
# the tree from O=, as in a cross build), in DIR (default WORK/weak-KERNEL).
weak_tree() {
    local k=$1 d=${2:-$work/weak-$1} s=$work/weak-src/tools/testing/selftests
    rm -rf "$d" "$work/weak-src"; mkdir -p "$s"; cp -r "$tests/ftrace" "$s/"
    (cd "$work/weak-src" && GIT_CEILING_DIRECTORIES=$work git apply --include='tools/testing/selftests/ftrace/*' "${PATCHES[@]}") &&
        mv "$s/ftrace" "$d" && [ -f "$d/test.d/ftrace/func_dead_weak_module.tc" ] || die "the series' selftest does not apply"
    [ "$arch" != x86_64 ] || cp "$work/ftrace/poll" "$d/poll"
    # unsupported: a notrace function between the function before and the
    # weak body, as a toolchain placing the body elsewhere would leave it.
    [ -z "${2:-}" ] || sed -i 's/^int __weak/static notrace __used int test_ftrace_weak_gap(void) { return 0; }\n&/' "$d/test_modules/test_ftrace_weak_dead.c"
    build_kernel "test_ftrace_weak.ko against the $k kernel" "$d.log" -C "$d/test_modules" O="$e2e/obj-$k" "${mkv[@]}" W=1
    # The compiler's warnings (FILE:LINE:COL), not Kbuild's note on pahole.
    ! grep -qE '^[^ ]+:[0-9]+:[0-9]+: warning:' "$d.log" || die "test_ftrace_weak.ko: W=1 warnings (see $d.log)"
}
weak_boot() { # CASE: boot it into WORK/boots/weak-CASE (report.py --weak judges it)
    local c=$1 k=series d out=$work/boots/weak-$1 x86=()
    case "$c" in stock*|unsupported) k=stock;; lookup) k=lookup;; esac
    d=$work/weak-$c
    case "$c" in
        lookup) d=$work/weak-stock;;
        stock-processed)
            rm -rf "$d"; cp -r "$work/weak-stock" "$d"
            "$ZWM" --format json --kconfig "$e2e/obj-stock/include/config/auto.conf" \
                -o "$d/test_modules/test_ftrace_weak.ko" "$work/weak-stock/test_modules/test_ftrace_weak.ko" \
                >"$d.tool.json" || die "the tool failed on test_ftrace_weak.ko (see $d.tool.json)"
            # The module must hold exactly one dead weak callsite of three, or
            # the stock case would prove nothing.
            python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); sys.exit(not (r["entries"] == 3 and r["weak"] == 1))' \
                "$d.tool.json" || die "the tool did not zero 1 of 3 entries of test_ftrace_weak.ko: $(cat "$d.tool.json")";;
        unsupported) weak_tree stock "$d";;
        unresolved)
            rm -rf "$d"; cp -r "$work/weak-series" "$d"
            head -c 4096 "$work/weak-series/test_modules/test_ftrace_weak.ko" > "$d/test_modules/test_ftrace_weak.ko";;
    esac
    rm -rf "$out"; mkdir -p "$out"
    printf 'SUITES="ftrace"\nPRELOAD=kvm\nFTRACE_TESTS="test.d/ftrace/func_dead_weak_module.tc"\nFTRACE_TIMEOUT=400\n' > "$out/selftests.conf"
    [ "$arch" != x86_64 ] || x86=(--add "/bin/bash-static=bin/bash" --tree "$ul")
    log "booting the $k kernel for func_dead_weak_module.tc ($c)"
    "$GUEST/run.sh" --arch "$arch" --kernel "$e2e/obj-$k/$image" --out "$out" \
        --mem 1024 --timeout 900 --payload "$GUEST/payload/selftests.sh" \
        --add "$out/selftests.conf=selftests.conf" --add "$d=selftests/ftrace" ${x86[@]+"${x86[@]}"} ||
        log "warning: the guest did not power off in time ($out)"
}
# make install of the series' ftrace selftests without KDIR (on the host,
# x86_64): no module is built, and the install must still succeed; with
# stock's lib.mk it fails.
install_check() {
    local t=$work/install-check sel=$e2e/src-series/tools/testing/selftests rc
    rm -rf "$t"; mkdir -p "$t"
    make -s -C "$sel/ftrace" KDIR="$t/no-kdir" INSTALL_PATH="$t/series" install >"$t/series.log" 2>&1 ||
        die "make install of the series' ftrace selftests failed without KDIR (see $t/series.log)"
    # lib.mk finds the tree through its own path, so stock's is swapped in
    # place for the control, and put back even if the script is stopped.
    cp "$sel/lib.mk" "$t/lib.mk.series"; cp "$e2e/src-stock/tools/testing/selftests/lib.mk" "$sel/lib.mk"
    # shellcheck disable=SC2064 # the paths now: the function's locals are gone on exit
    trap "cp '$t/lib.mk.series' '$sel/lib.mk'" EXIT
    rc=0; make -s -C "$sel/ftrace" KDIR="$t/no-kdir" INSTALL_PATH="$t/stock" install >"$t/stock.log" 2>&1 || rc=$?
    cp "$t/lib.mk.series" "$sel/lib.mk"; trap - EXIT
    make -s -C "$sel/ftrace" clean >/dev/null 2>&1 || true
    [ $rc != 0 ] || die "make install without KDIR passed with stock's lib.mk too: the check proves nothing"
    log "make install without KDIR: passes with the series' lib.mk, fails with stock's (negative control)"
}
if [ -n "$weak" ]; then
    [ "$arch" != x86_64 ] || install_check
    case " $weak " in *" stock"*|*" lookup "*|*" unsupported "*) weak_tree stock;; esac
    case " $weak " in *" series"*|*" unresolved "*) weak_tree series;; esac
    for c in $weak; do
        case "$c" in stock|lookup|stock-processed|series|unsupported|unresolved) ;; *) die "unknown --weak case $c";; esac
        weak_boot "$c"
    done
fi

boots=()
for f in $forms; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
    boot "$f" &
    boots+=("$work/boots/$f")
done
wait
rc=0
[ -z "$weak" ] || weak_report || rc=1
[ ${#boots[@]} -eq 0 ] || python3 "$HERE/report.py" "$work/report.md" "${boots[@]}" || rc=1
exit $rc
