#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# kbuild-btf.sh — prove on a real Linux 7.2 build with
# CONFIG_DEBUG_INFO_BTF_MODULES that the Kbuild hook (Makefile.snippet)
# never leaves a module without BTF, whatever happens to the tool.
#
#   scripts/kbuild-btf.sh [--src DIR] [--work DIR] [--old-rev REV]
#
# Why: modfinal runs its BTF step only when a prerequisite of the .ko is
# newer (`$(newer-prereqs)`), never because the link command changed.  A
# hook that relinks modules through a changed command line (the tool's
# --version or flags recorded in cmd_ld_ko_o, as the snippet of REV did)
# therefore strips .BTF from every module on each tool upgrade, and a
# version text with shell syntax in it breaks the link.
#
# The run, all in one 7.2 object tree (x86_64 tinyconfig plus modules,
# dynamic ftrace, DWARF 5, BTF and module BTF; two modules =m, and
# testdata/zwm_test as an external module):
#   0. stock build, no hook: every module has .BTF (else BTF cannot be
#      judged on this host: fail);
#   1. negative control, the snippet of REV (default: the last one that
#      recorded the version in the link command): switching it on relinks
#      every module without its BTF step, so the modules lose .BTF; a tool
#      whose --version prints parentheses breaks the build with the shell's
#      'Syntax error: "(" unexpected'.  Each of these must happen, or the
#      proof below could not see the defect;
#   2. the current snippet: switching it on, upgrading the tool (a version
#      with parentheses) and changing ZERO_WEAK_MCOUNT_FLAGS each relink
#      every module, rerun its BTF step and the tool (quiet lines LD, BTF,
#      ZWM for each; .BTF present; the tool called on each .ko); a make
#      with no change runs none of them and leaves every .ko and the stamp
#      byte for byte and mtime for mtime alone;
#   3. the same for an external module (M=) built against the tree: its
#      stamp is in the module's directory, not in the kernel's.
#
# The tool is a wrapper around the real one (ZWM, default a fresh cargo
# build) that prints the version held in WORK/version and logs each call.
#
# --src DIR   an unpacked linux-source-7.2, read only (a tree of symlinks
#             with a private copy of scripts/ is built on it, so the hook
#             never touches DIR).  Default: Debian sid's linux-source-7.2,
#             fetched with scripts/fetch-debian-kernel.sh and unpacked once
#             into WORK.
# --work DIR  default ${ZWM_CACHE:-~/.cache/zero-weak-mcount}/kbuild-btf;
#             a rerun builds incrementally.
# --old-rev   the git revision whose Makefile.snippet is the control
#             (default 8f72ccd).
# Environment: ZWM (the tool), ZWM_JOBS (make -j, default nproc+1),
# ZWM_BUILD_LOCK (if set, every kernel make runs under flock on it).
#
# Host needs: make gcc flex bison bc libelf-dev libssl-dev dwarves (pahole
# >= 1.22) git python3-pyelftools; installed with apt-get when missing and
# run as root.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROG=kbuild-btf
. "$REPO/scripts/lib.sh"

src="" old_rev=8f72ccd
work=${ZWM_CACHE:-$HOME/.cache/zero-weak-mcount}/kbuild-btf
while [ $# -gt 0 ]; do
    case "$1" in
        --src) src=$2; shift 2;;
        --work) work=$2; shift 2;;
        --old-rev) old_rev=$2; shift 2;;
        *) arg_error "$1";;
    esac
done
mkdir -p "$work"
work=$(cd "$work" && pwd)
t_start=$(date +%s)

missing_packages "${KBUILD_NEEDS[@]}" "git git" "pahole dwarves" "python3 python3" \
    "/usr/lib/python3/dist-packages/elftools python3-pyelftools"
install_packages "${MISSING[@]}"
need_elftools
pv=$(pahole --version | sed -n 's/^v\([0-9]*\)\.\([0-9]*\).*/\1\2/p')
[ -n "$pv" ] && [ "$pv" -ge 122 ] || die "pahole $(pahole --version) is older than 1.22, which 7.2's DEBUG_INFO_BTF needs"

REAL=$(find_tool "${ZWM:-}") || exit 1
old_snippet=$work/old-snippet
git -C "$REPO" show "$old_rev:Makefile.snippet" >"$old_snippet" 2>/dev/null ||
    die "no Makefile.snippet at revision $old_rev (the control needs a git checkout)"
grep -q 'cmd_ld_ko_o += .*zwm-version' "$old_snippet" ||
    die "the snippet of $old_rev does not record the version in cmd_ld_ko_o: not the control this proof needs"

# --- the source: a symlink tree over the read-only one, with its own scripts/ ---
if [ -z "$src" ]; then
    series_source 7.2
    src=$work/linux-source-7.2
    unpack_tree "$src" 0
fi
src=$(cd "$src" && pwd)
[ "$(sed -n 's/^VERSION = //p;s/^PATCHLEVEL = //p' "$src/Makefile" | paste -sd.)" = 7.2 ] || die "$src is not a Linux 7.2 tree"
tree=$work/tree obj=$work/obj
mkdir -p "$tree"
for e in "$src"/* "$src"/.[!.]*; do
    n=$(basename "$e")
    [ "$n" = scripts ] || [ "$n" = .zwm-stamp ] || ln -sfn "$e" "$tree/$n"
done
if [ ! -d "$tree/scripts" ]; then
    cp -a "$src/scripts" "$tree/scripts"
fi
hook=$REPO/dist/install-kbuild-hook
"$hook" -q --uninstall "$tree" || die "removing an old hook from $tree failed"
cmp -s "$tree/scripts/Makefile.modfinal" "$src/scripts/Makefile.modfinal" || die "$tree/scripts/Makefile.modfinal is not 7.2's"

# --- the configuration -------------------------------------------------------------
kmake_in() { # OBJDIR MAKE-ARGS...: make of the tree, under the build lock (lib.sh's locked)
    local o=$1
    shift
    locked make -C "$tree" O="$o" "$@"
}
kmake() { kmake_in "$obj" "$@"; }
mkdir -p "$obj.cfg"
kmake_in "$obj.cfg" -s tinyconfig >/dev/null
"$tree/scripts/config" --file "$obj.cfg/.config" \
    -e 64BIT -e MODULES -e MODULE_UNLOAD -e FTRACE -e FUNCTION_TRACER -e DYNAMIC_FTRACE \
    -e DEBUG_KERNEL -e DEBUG_INFO -d DEBUG_INFO_NONE -e DEBUG_INFO_DWARF5 \
    -e BPF -e BPF_SYSCALL -e DEBUG_INFO_BTF -e DEBUG_INFO_BTF_MODULES \
    -m BINFMT_MISC -m CONFIGFS_FS -d WERROR --set-str LOCALVERSION "" -d LOCALVERSION_AUTO
kmake_in "$obj.cfg" -s olddefconfig >/dev/null
for o in CONFIG_MODULES=y CONFIG_DYNAMIC_FTRACE=y CONFIG_DEBUG_INFO_BTF=y CONFIG_DEBUG_INFO_BTF_MODULES=y \
         CONFIG_BINFMT_MISC=m CONFIG_CONFIGFS_FS=m; do
    grep -qx "$o" "$obj.cfg/.config" || die "the configuration lacks $o"
done
install_config "$obj.cfg" "$obj"

# --- the tool: a wrapper with a version we choose ----------------------------------
tool=$work/bin/zero-weak-mcount
mkdir -p "$work/bin"
cat >"$tool" <<EOF
#!/bin/sh
if [ "\$1" = --version ]; then cat '$work/version'; exit 0; fi
printf '%s\n' "\$*" >>'$work/calls.log'
exec '$REAL' "\$@"
EOF
chmod +x "$tool"
"$REAL" --version >"$work/version"

# --- checks ---------------------------------------------------------------------------
ext=$work/ext
rm -rf "$ext"; mkdir -p "$ext"
cp "$REPO"/testdata/zwm_test/Kbuild "$REPO"/testdata/zwm_test/*.[ch] "$ext/"
declare -A secs=()
step=""
# step_make NAME MAKE-ARGS...: one make of the checks, logged to WORK/NAME.log
# and timed, with a fresh log of the tool's calls
step_make() {
    local n=$1 t0 rc=0
    shift
    step=$n
    : >"$work/calls.log"
    t0=$(date +%s)
    kmake -j"$JOBS" ZERO_WEAK_MCOUNT="$tool" "$@" >"$work/$n.log" 2>&1 || rc=$?
    secs[$n]=$(( $(date +%s) - t0 ))
    return $rc
}
# build NAME [MAKE-ARGS...]: the whole tree; extbuild: the external module against it
build() { step_make "$@" vmlinux modules; }
extbuild() { step_make "$@" M="$ext" modules; }
fail() { sed 's/^/    | /' "$work/$step.log" | tail -n 40 >&2; die "$step: $*"; }
mods() { sed 's/\.o$/.ko/' "$obj/modules.order"; }
# sect_size KO NAME: the section's size in bytes (0 if it has none)
sect_size() { python3 "$GUEST/guest.py" secsize "$1" "$2"; }
has_btf() { [ "$(sect_size "$1" .BTF)" -gt 0 ]; }
quiet_line() { grep -qxF "  $1 $2" "$work/$step.log"; }
called_on() { grep -q " $1\$" "$work/calls.log"; }
snapshot() { local f; for f in "$@"; do printf '%s %s\n' "$(sha256sum <"$f")" "$(stat -c %Y.%y "$f")"; done; }

# every module (DIR, its module list on stdin) relinked, with its BTF step
# and the tool (WHAT: "processed" or "no-zwm")
expect_rebuilt() {
    local dir=$1 what=$2 m n=0
    while read -r m; do
        n=$((n + 1))
        quiet_line 'LD [M] ' "$m" || fail "$m was not relinked"
        quiet_line 'BTF [M]' "$m" || fail "$m: the BTF step did not run after the relink"
        has_btf "$dir/$m" || fail "$m has no .BTF"
        if [ "$what" = processed ]; then
            quiet_line 'ZWM [M]' "$m" || fail "$m: no ZWM [M] line"
            called_on "$dir/$m" || called_on "$m" || fail "the tool was not called on $m"
            "$REAL" --check "$dir/$m" </dev/null || fail "$m: zero-weak-mcount --check says it is not processed"
        fi
    done
    [ "$n" -gt 0 ] || fail "no module"
}
expect_nothing() { # SNAPSHOT FILE...: no LD/BTF/ZWM line, no tool call, files as in SNAPSHOT
    local before=$1
    shift
    ! grep -qE '^  (LD \[M\]|BTF \[M\]|ZWM \[M\])' "$work/$step.log" || fail "a make with no change relinked or reprocessed"
    [ ! -s "$work/calls.log" ] || fail "a make with no change called the tool"
    [ "$(snapshot "$@")" = "$before" ] || fail "a make with no change touched a .ko or the stamp"
}

# --- 0. stock --------------------------------------------------------------------------
log "0. stock build of $(basename "$src") (the first run builds vmlinux: many minutes)"
build stock ZERO_WEAK_MCOUNT= || fail "the stock build failed"
mods >"$work/mods"
while read -r m; do has_btf "$obj/$m" || fail "stock: $m has no .BTF: BTF cannot be judged on this host"; done <"$work/mods"
log "0. stock: $(wc -l <"$work/mods") modules, each with .BTF: $(paste -sd' ' "$work/mods")"

# --- 1. the control: the old snippet ------------------------------------------------------
"$hook" -q --snippet "$old_snippet" "$tree" || die "installing the snippet of $old_rev failed"
build old-on || fail "the build with the snippet of $old_rev failed"
lost=0
while read -r m; do
    quiet_line 'LD [M] ' "$m" && quiet_line 'ZWM [M]' "$m" || fail "control: $m was not relinked and processed"
    ! quiet_line 'BTF [M]' "$m" || fail "control: $m got its BTF step: the defect is not reproduced"
    has_btf "$obj/$m" || lost=$((lost + 1))
done <"$work/mods"
[ "$lost" = "$(wc -l <"$work/mods")" ] || fail "control: only $lost modules lost .BTF"
log "1. control ($old_rev's snippet), switched on: every module relinked (LD [M], ZWM [M]), no BTF [M]; $lost of $lost modules lost .BTF"
echo 'zero-weak-mcount 1.2 (Debian 1.2-1)' >"$work/version"
if build old-parens; then fail "control: a version with parentheses did not break the build"; fi
grep -q 'Syntax error: "(" unexpected' "$work/old-parens.log" || fail "control: the build failed, but not with the shell's syntax error"
log "1. control: --version 'zero-weak-mcount 1.2 (Debian 1.2-1)': the build fails: $(grep -m1 'Syntax error' "$work/old-parens.log")"

# --- 2. the current snippet --------------------------------------------------------------------
"$hook" -q --uninstall "$tree" || die "removing the control hook failed"
"$hook" -q --snippet "$REPO/Makefile.snippet" "$tree" || die "installing Makefile.snippet failed"
"$REAL" --version >"$work/version"
stampf=$obj/.zero-weak-mcount.ko.stamp
build new-on || fail "the build with Makefile.snippet failed"
expect_rebuilt "$obj" processed <"$work/mods"
[ -f "$stampf" ] || fail "no stamp at $stampf"
log "2. Makefile.snippet switched on: every module relinked, BTF [M], ZWM [M], .BTF present, --check clean"

snap=$(mapfile -t ms <"$work/mods"; snapshot "$stampf" "${ms[@]/#/$obj/}")
build new-same || fail "the no-change build failed"
# shellcheck disable=SC2046 # module paths, without spaces
expect_nothing "$snap" "$stampf" $(sed "s|^|$obj/|" "$work/mods")
log "2. no change: no LD/BTF/ZWM line, no tool call, every .ko and the stamp keep bytes and mtime (${secs[new-same]} s)"

echo 'zero-weak-mcount 1.2 (Debian 1.2-1)' >"$work/version"
build new-upgrade || fail "the build after the upgrade failed"
expect_rebuilt "$obj" processed <"$work/mods"
grep -qxF 'zero-weak-mcount 1.2 (Debian 1.2-1)' "$stampf" || fail "the stamp does not hold the new version"
log "2. upgrade to --version 'zero-weak-mcount 1.2 (Debian 1.2-1)': every module relinked, BTF [M], ZWM [M], .BTF present"

build new-flags ZERO_WEAK_MCOUNT_FLAGS=--signed=strip || fail "the build with new flags failed"
expect_rebuilt "$obj" processed <"$work/mods"
grep -q -- '--signed=strip' "$stampf" || fail "the stamp does not hold the flags"
snap=$(mapfile -t ms <"$work/mods"; snapshot "$stampf" "${ms[@]/#/$obj/}")
build new-flags-same ZERO_WEAK_MCOUNT_FLAGS=--signed=strip || fail "the no-change build failed"
# shellcheck disable=SC2046 # module paths, without spaces
expect_nothing "$snap" "$stampf" $(sed "s|^|$obj/|" "$work/mods")
log "2. ZERO_WEAK_MCOUNT_FLAGS=--signed=strip: every module relinked, BTF [M], ZWM [M], .BTF present; then no change: nothing"

# --- 3. an external module ------------------------------------------------------------------------
ko=$ext/zwm_test.ko
extbuild ext-on ZERO_WEAK_MCOUNT_FLAGS=--signed=strip || fail "the external module build failed"
echo zwm_test.ko | expect_rebuilt "$ext" processed
[ -f "$ext/.zero-weak-mcount.ko.stamp" ] || fail "no stamp in the external module's directory"
relocs=$(readelf -r -W "$ko" | sed -n "s/^Relocation section '\.rela__mcount_loc' at offset [^ ]* contains \([0-9]*\) entr.*/\1/p")
words=$(( $(sect_size "$ko" __mcount_loc) / 8 ))
[ "${relocs:-0}" -lt "$words" ] || fail "zwm_test.ko: nothing zeroed (.rela__mcount_loc $relocs for $words words)"
rm -f "$work/pwned"
echo "zero-weak-mcount 1.3 (Debian 1.3-1) \$(shell touch $work/pwned) \`touch $work/pwned\`" >"$work/version"
s0=$(stat -c %Y "$stampf")
extbuild ext-upgrade ZERO_WEAK_MCOUNT_FLAGS=--signed=strip || fail "the external build after the upgrade failed"
echo zwm_test.ko | expect_rebuilt "$ext" processed
grep -qxF "$(cat "$work/version")" "$ext/.zero-weak-mcount.ko.stamp" || fail "the external stamp does not hold the version verbatim"
[ "$(stat -c %Y "$stampf")" = "$s0" ] || fail "the external build rewrote the kernel tree's stamp"
[ ! -e "$work/pwned" ] || fail "the version text ran as make or shell code"
snap=$(snapshot "$ext/.zero-weak-mcount.ko.stamp" "$ko")
extbuild ext-same ZERO_WEAK_MCOUNT_FLAGS=--signed=strip || fail "the external no-change build failed"
expect_nothing "$snap" "$ext/.zero-weak-mcount.ko.stamp" "$ko"
log "3. external zwm_test.ko (M=): processed (.rela__mcount_loc $relocs for $words words) with .BTF; its stamp is in $ext; a version with \$(shell ...) and backquotes relinks, reruns BTF and the tool, and is kept verbatim; no change: nothing"

log "times (s): $(for k in stock old-on new-on new-same new-upgrade new-flags ext-on ext-upgrade ext-same; do printf '%s=%s ' "$k" "${secs[$k]}"; done)total=$(( $(date +%s) - t_start ))"
echo "kbuild-btf: PASS"
