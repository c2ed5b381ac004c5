#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Kbuild hook, real build: install the hook into a private copy of Debian's
# linux-headers-KVER (arch tree + -common + linux-kbuild, as installed), then
# build testdata/zwm_test out of tree with `make -C <headers> M=<dir>` and
# check what the hook does.  Leaves the copy hooked (the DKMS test uses it).
#
# Needs: ZWM_REPO ZWM_TOOL ZWM_KVER ZWM_WORK ZWM_HDR ZWM_ROOT (see lib.sh).
suite=kbuild
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
: "${ZWM_HDR:?}"
need_cmd make gcc-12 readelf

hook=$ZWM_ROOT/usr/sbin/install-kbuild-hook
W=$ZWM_WORK/kbuild
rm -rf "$W"
mkdir -p "$W"

# --- 1. the installer ---------------------------------------------------------
host_build=/lib/modules/$ZWM_KVER/build
host_mf=$(readlink -f "$host_build/scripts/Makefile.modfinal")
before=$(sha "$host_mf")
"$hook" --dry-run "$host_build" >"$W/dry.out" 2>&1 || { show "$W/dry.out"; fail "install-kbuild-hook --dry-run $host_build failed"; }
show "$W/dry.out"
[ "$(sha "$host_mf")" = "$before" ] || fail "--dry-run changed $host_mf"
grep -q "would hook" "$W/dry.out" || grep -q "already hooked" "$W/dry.out" ||
	fail "--dry-run did not say what it would do"
ok "installer --dry-run on the host's $host_build resolves to $host_mf and changes nothing"

mf=$(readlink -f "$ZWM_HDR/scripts/Makefile.modfinal")
case "$mf" in "$ZWM_WORK"/*) ;; *) fail "the headers copy's Makefile.modfinal resolves outside the copy: $mf" ;; esac
orig=$(sha "$mf")
cp -- "$mf" "$W/Makefile.modfinal.orig"

# A wrapper stands in as the distribution-shipped binary: it logs every
# processing call (not --version) and runs the real tool.
# ZWM_FAKE_VERSION in the environment makes it report another version, like
# an upgraded tool.
cat >"$W/zwm-logging" <<EOF
#!/bin/sh
case "\$1" in
--version) [ -n "\${ZWM_FAKE_VERSION:-}" ] && { echo "zero-weak-mcount \$ZWM_FAKE_VERSION"; exit 0; } ;;
*) printf '%s\n' "\$*" >>"$W/tool-calls.log" ;;
esac
exec "$ZWM_TOOL" "\$@"
EOF
chmod +x "$W/zwm-logging"
calls() { if [ -f "$W/tool-calls.log" ]; then wc -l <"$W/tool-calls.log"; else echo 0; fi; }

"$hook" --tool "$W/zwm-logging" "$ZWM_HDR" >"$W/install.out" 2>&1 || { show "$W/install.out"; fail "install-kbuild-hook failed"; }
show "$W/install.out"
grep -q "hooked: include at line" "$W/install.out" || fail "installer did not report the hook lines"
[ "$(grep -cxF 'include $(srctree)/scripts/Makefile.zero-weak-mcount' "$mf")" = 1 ] || fail "include line missing in $mf"
[ "$(grep -cxF "$(printf '\t+$(zero-weak-mcount-ko)')" "$mf")" = 1 ] || fail "recipe line missing in $mf"
[ -f "$(dirname "$mf")/Makefile.zero-weak-mcount" ] || fail "snippet not copied next to $mf"
diff -u "$W/Makefile.modfinal.orig" "$mf" >"$W/hook.diff" || true
show "$W/hook.diff" "diff "
ok "installer hooked $mf: one include line + one recipe line after the BTF step; snippet copied"

h1=$(sha "$mf")
"$hook" "$ZWM_HDR" >"$W/install2.out" 2>&1 || fail "second install failed"
grep -q "already hooked" "$W/install2.out" || { show "$W/install2.out"; fail "second install did not say 'already hooked'"; }
[ "$(sha "$mf")" = "$h1" ] || fail "second install changed $mf"
"$hook" --status "$ZWM_HDR" >/dev/null || fail "--status says not hooked"
ok "installer is idempotent (second run: 'already hooked', file unchanged; --status exits 0)"

"$hook" --uninstall "$ZWM_HDR" >"$W/uninstall.out" 2>&1 || { show "$W/uninstall.out"; fail "--uninstall failed"; }
[ "$(sha "$mf")" = "$orig" ] || fail "--uninstall did not restore $mf byte for byte"
[ ! -e "$(dirname "$mf")/Makefile.zero-weak-mcount" ] || fail "--uninstall left the snippet behind"
rc=0; "$hook" --status "$ZWM_HDR" >/dev/null 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "--status after --uninstall exits $rc, expected 1"
"$hook" --uninstall "$ZWM_HDR" >/dev/null 2>&1 || fail "a second --uninstall failed"
ok "--uninstall restores Makefile.modfinal byte for byte (sha256 $orig), removes snippet and tool; repeatable"

"$hook" -q --tool "$W/zwm-logging" "$ZWM_HDR" || fail "re-install failed"

# --- 2. builds ------------------------------------------------------------------
src=$W/zwm_test
mkdir -p "$src"
cp -- "$ZWM_REPO"/testdata/zwm_test/Kbuild "$ZWM_REPO"/testdata/zwm_test/*.[ch] "$src"/
ko=$src/zwm_test.ko
# kmake LOGNAME [make args...]: make -C <headers> M=<src> modules; stdout and
# stderr go to $W/LOGNAME.out / .err
kmake() {
	local n=$1
	shift
	${ZWM_KBUILD_LOCK:+flock "$ZWM_KBUILD_LOCK"} make -C "$ZWM_HDR" M="$src" "$@" modules >"$W/$n.out" 2>"$W/$n.err"
}
stamp=$src/.zero-weak-mcount.ko.stamp
# modfinal's BTF step ran for the module: without a vmlinux (headers trees
# ship none) it says so, once per run of the step
btf_step_ran() { grep -qxF "Skipping BTF generation for $ko due to unavailability of vmlinux" "$W/$1.err"; }
# the stderr lines that are not Debian Kbuild's own BTF notice (6.1 headers
# ship no vmlinux, so every module build prints it)
own_stderr() { grep -v '^Skipping BTF generation for .* due to unavailability of vmlinux$' "$1" || true; }

# 2a. control: the hook switched off with ZERO_WEAK_MCOUNT= (empty)
kmake control ZERO_WEAK_MCOUNT= || { show "$W/control.err"; fail "control build (ZERO_WEAK_MCOUNT=) failed"; }
! grep -q 'ZWM \[M\]' "$W/control.out" || fail "ZERO_WEAK_MCOUNT= still ran the step"
[ "$(calls)" = 0 ] || fail "ZERO_WEAK_MCOUNT= still called the tool"
expect_unprocessed "$ko" "control build (ZERO_WEAK_MCOUNT= turns the step off)"
cp -- "$ko" "$W/control.ko"

# 2b. hooked build: switching the step on relinks and processes
kmake first || { show "$W/first.err"; fail "hooked build failed"; }
show "$W/first.out"
grep -qxF "  LD [M]  $ko" "$W/first.out" || fail "enabling the tool did not relink"
grep -qxF "  ZWM [M] $ko" "$W/first.out" || fail "no quiet line '  ZWM [M] $ko'"
btf_step_ran first || { show "$W/first.err"; fail "the relink did not rerun modfinal's BTF step"; }
[ -f "$stamp" ] || fail "no stamp $stamp in the module's directory"
[ -z "$(find "$(readlink -f "$ZWM_HDR")" "$(dirname "$mf")" -name '.zero-weak-mcount.ko.stamp')" ] || fail "a stamp was written into the headers tree"
[ "$(calls)" = 1 ] || fail "tool called $(calls) times, expected 1"
ok "hooked build: quiet line '  ZWM [M] <ko>' right after LD and the BTF step (which reran: 'Skipping BTF generation', no vmlinux in headers); stamp in the module's directory, none in the headers tree; tool found at \$(objtree)/tools/zero-weak-mcount/ and called once: $(cat "$W/tool-calls.log")"
expect_processed "$ko" "hooked build"
"$ZWM_TOOL" --kconfig "$ZWM_HDR/include/config/auto.conf" --section __mcount_loc -o "$W/by-hand.ko" "$W/control.ko" 2>"$W/by-hand.err" ||
	{ show "$W/by-hand.err"; fail "running the tool by hand on the control module failed"; }
cmp -s "$W/by-hand.ko" "$ko" || fail "the hooked build differs from running the tool by hand on the control module"
ok "hooked .ko is byte-identical to 'zero-weak-mcount --kconfig auto.conf --section __mcount_loc -o OUT control.ko'"

# 2c. nothing changed: nothing runs, the .ko keeps its bytes and mtime
s1=$(sha "$ko"); m1=$(mtime "$ko")
sleep 1.1
kmake second || { show "$W/second.err"; fail "second build failed"; }
! grep -qE 'LD \[M\]|ZWM \[M\]' "$W/second.out" || { show "$W/second.out"; fail "second make without changes relinked or reran the step"; }
[ "$(calls)" = 1 ] || fail "second make called the tool again"
[ "$(sha "$ko")" = "$s1" ] && [ "$(mtime "$ko")" = "$m1" ] || fail "second make touched the .ko"
ok "second make with no change: no LD/ZWM line, tool not called (still 1 call), .ko sha256 and mtime unchanged"

# 2d. touching a source relinks and reprocesses
touch_later "$src/main.c"
kmake touched || { show "$W/touched.err"; fail "build after touch failed"; }
grep -qxF "  LD [M]  $ko" "$W/touched.out" && grep -qxF "  ZWM [M] $ko" "$W/touched.out" ||
	{ show "$W/touched.out"; fail "touching main.c did not relink+reprocess"; }
[ "$(calls)" = 2 ] || fail "tool calls: $(calls), expected 2"
expect_processed "$ko" "after touching main.c"
cmp -s "$ko" "$W/by-hand.ko" || fail "relinked+reprocessed .ko differs from the first result"
ok "touch main.c: CC, LD [M], ZWM [M]; tool called again (2 calls); same bytes as before"

# 2e. V=1 shows the command, as for every Kbuild step, and adds no -v: Kbuild's
# V=1 only echoes commands
touch_later "$src/weak.c"
kmake v1 V=1 || { show "$W/v1.err"; fail "V=1 build failed"; }
grep -E 'zero-weak-mcount(/zero-weak-mcount)? --kconfig [^ ]*/include/config/auto.conf --section __mcount_loc '"$ko"'$' "$W/v1.out" >"$W/v1.cmd" ||
	{ show "$W/v1.out"; fail "V=1 did not print the tool command (without -v)"; }
show "$W/v1.cmd" "V=1 stdout: "
own_stderr "$W/v1.err" >"$W/v1.own"
[ ! -s "$W/v1.own" ] || { show "$W/v1.own"; fail "V=1 made the tool report (-v)"; }
ok "V=1 prints the command on stdout, without -v; the tool says nothing"
c0=$(calls)
kmake v1again V=1 || fail "second V=1 build failed"
! grep -qE '(^| )ld -r |zero-weak-mcount .*--section ' "$W/v1again.out" && [ "$(calls)" = "$c0" ] ||
	{ show "$W/v1again.out"; fail "V=1 alone (no change) relinked or ran the tool"; }
ok "V=1 without a change relinks nothing and runs the tool only for --version"

# 2f. make -s: nothing on stdout, nothing of ours on stderr
touch_later "$src/main.c"
kmake silent -s || { show "$W/silent.err"; fail "make -s failed"; }
[ ! -s "$W/silent.out" ] || { show "$W/silent.out"; fail "make -s printed on stdout"; }
own_stderr "$W/silent.err" >"$W/silent.own"
[ ! -s "$W/silent.own" ] || { show "$W/silent.own"; fail "make -s printed on stderr"; }
[ "$(calls)" = 4 ] || fail "tool calls: $(calls), expected 4"
expect_processed "$ko" "make -s build"
ok "make -s with a relink: stdout empty; stderr only Debian's own 'Skipping BTF generation' line ($(wc -l <"$W/silent.err") line(s))"

# 2g. a flag change relinks and reprocesses; so does changing it back
kmake flags ZERO_WEAK_MCOUNT_FLAGS=--signed=refuse || { show "$W/flags.err"; fail "build with extra flags failed"; }
grep -qxF "  LD [M]  $ko" "$W/flags.out" && grep -qxF "  ZWM [M] $ko" "$W/flags.out" ||
	{ show "$W/flags.out"; fail "a flag change did not relink+reprocess"; }
grep -q -- '--signed=refuse' "$stamp" || fail "flags not recorded in $stamp"
btf_step_ran flags || fail "a flag change did not rerun the BTF step"
kmake flags-back || fail "build after removing the flag failed"
grep -qxF "  ZWM [M] $ko" "$W/flags-back.out" || fail "removing the flag did not reprocess"
expect_processed "$ko" "after flag changes"
ok "ZERO_WEAK_MCOUNT_FLAGS=--signed=refuse relinks, reruns the BTF step and reprocesses (recorded in the stamp); dropping it again does too"

# 2g'. a new tool version relinks and reprocesses (the --version line is recorded)
c0=$(calls)
ZWM_FAKE_VERSION=99.0.0 kmake upgrade || { show "$W/upgrade.err"; fail "build with the 'upgraded' tool failed"; }
grep -qxF "  LD [M]  $ko" "$W/upgrade.out" && grep -qxF "  ZWM [M] $ko" "$W/upgrade.out" ||
	{ show "$W/upgrade.out"; fail "a new tool version did not relink+reprocess"; }
[ "$(calls)" = $((c0 + 1)) ] || fail "the upgraded tool was not called"
grep -qxF 'zero-weak-mcount 99.0.0' "$stamp" || fail "the version is not recorded in $stamp"
btf_step_ran upgrade || fail "the upgrade did not rerun the BTF step"
kmake downgrade || fail "build after the 'upgrade' failed"
grep -qxF "  ZWM [M] $ko" "$W/downgrade.out" || fail "going back to the old version did not reprocess"
ok "a tool reporting a new --version (same path) relinks, reruns the BTF step and reprocesses; the version line is in the stamp"

# 2g''. a distribution's version text, with shell syntax in it
v='1.2 (Debian 1.2-1) $(shell touch '"$W"'/pwned) `touch '"$W"'/pwned2`; false'
ZWM_FAKE_VERSION=$v kmake parens || { show "$W/parens.err"; fail "a --version with parentheses broke the build"; }
grep -qxF "  LD [M]  $ko" "$W/parens.out" && grep -qxF "  ZWM [M] $ko" "$W/parens.out" && btf_step_ran parens ||
	{ show "$W/parens.out"; fail "the version with parentheses did not relink, rerun BTF and reprocess"; }
grep -qxF "zero-weak-mcount $v" "$stamp" || fail "the stamp does not hold the version verbatim"
[ ! -e "$W/pwned" ] && [ ! -e "$W/pwned2" ] || fail "the version text ran as make or shell code"
expect_processed "$ko" "after a --version with parentheses"
ZWM_FAKE_VERSION=$v kmake parens-same || fail "second build with that version failed"
! grep -qE 'LD \[M\]|ZWM \[M\]' "$W/parens-same.out" || fail "the same version again relinked"
kmake parens-back || fail "build after the version with parentheses failed"
ok "--version '$v': builds, relinks, reruns BTF and reprocesses; kept verbatim in the stamp, never run; the same again does nothing"

# 2h. CONFIG_WERROR gives --fatal-warnings (command line overrides auto.conf)
kmake werror V=1 CONFIG_WERROR=y || { show "$W/werror.err"; fail "CONFIG_WERROR=y build failed"; }
grep -q -- 'zero-weak-mcount --kconfig .* --section __mcount_loc --fatal-warnings '"$ko" "$W/werror.out" ||
	{ show "$W/werror.out"; fail "CONFIG_WERROR=y did not add --fatal-warnings"; }
kmake werror-back || fail "build after CONFIG_WERROR failed"
ok "CONFIG_WERROR=y adds --fatal-warnings and relinks; V=1 line: $(grep -m1 -o 'zero-weak-mcount --kconfig.*' "$W/werror.out")"

# 2i. a configured but missing tool fails the build, and keeps failing
s_ok=$(sha "$ko")
rc=0; kmake missing ZERO_WEAK_MCOUNT=/nonexistent/zero-weak-mcount || rc=$?
[ "$rc" != 0 ] || fail "a missing tool did not fail the build"
grep -q "error: zero-weak-mcount: '/nonexistent/zero-weak-mcount' was not found" "$W/missing.err" ||
	{ show "$W/missing.err"; fail "no clear error for the missing tool"; }
show "$W/missing.err" "stderr: "
! grep -q 'LD \[M\]' "$W/missing.out" || fail "a missing tool still relinked the module"
[ "$(sha "$ko")" = "$s_ok" ] || fail "the failed build changed the processed .ko"
rc=0; kmake missing2 ZERO_WEAK_MCOUNT=/nonexistent/zero-weak-mcount || rc=$?
[ "$rc" != 0 ] || fail "the second build with the missing tool succeeded"
ok "ZERO_WEAK_MCOUNT=/nonexistent/...: make exits $rc with the error above before linking (the processed .ko is left as it was), a rerun fails again"

# 2j. a tool that fails fails the build
cat >"$W/zwm-failing" <<EOF
#!/bin/sh
[ "\$1" = --version ] && exec "$ZWM_TOOL" --version
echo "zwm-failing: simulated failure" >&2
exit 1
EOF
chmod +x "$W/zwm-failing"
rc=0; kmake failing ZERO_WEAK_MCOUNT="$W/zwm-failing" || rc=$?
[ "$rc" != 0 ] || fail "a failing tool did not fail the build"
grep -q 'simulated failure' "$W/failing.err" || fail "the tool's error did not reach stderr"
[ ! -e "$ko" ] || fail "the .ko was left behind after the tool failed"
ok "a tool that exits 1 fails the build (make exit $rc) and the .ko is deleted"

# 2k. back to normal
kmake recover || { show "$W/recover.err"; fail "build after the failures failed"; }
expect_processed "$ko" "rebuild after the failures"
ok "with the tool back, the next make relinks and processes the module"

# 2l. switching the step off is a change too: every module is relinked once,
# unprocessed, so none is left processed by a tool that is no longer asked
# for; switching it on again processes it
c0=$(calls)
kmake off ZERO_WEAK_MCOUNT= || { show "$W/off.err"; fail "build with the step off failed"; }
grep -qxF "  LD [M]  $ko" "$W/off.out" && ! grep -q 'ZWM \[M\]' "$W/off.out" && [ "$(calls)" = "$c0" ] ||
	{ show "$W/off.out"; fail "switching the step off did not relink without the tool"; }
grep -qx 'off (ZERO_WEAK_MCOUNT is empty): modules are not processed' "$stamp" || fail "the stamp does not say the step is off"
expect_unprocessed "$ko" "step switched off"
kmake on || { show "$W/on.err"; fail "build with the step back on failed"; }
grep -qxF "  ZWM [M] $ko" "$W/on.out" || fail "switching the step on again did not reprocess"
expect_processed "$ko" "step switched on again"
ok "ZERO_WEAK_MCOUNT= after a hooked build relinks the module once, unprocessed (the stamp says 'off'); on again, it is processed"

# --- 3. the control: the snippet that recorded the version in the link command ------
# (8f72ccd): an upgrade relinks through the changed command line, which
# modfinal's BTF step ignores, and the version text reaches the shell.
old=$W/old-snippet
git -C "$ZWM_REPO" show 8f72ccd:Makefile.snippet >"$old" 2>"$W/git.err" || { show "$W/git.err"; fail "no Makefile.snippet at 8f72ccd (the control needs the checkout's history)"; }
"$hook" -q --uninstall "$ZWM_HDR" && "$hook" -q --snippet "$old" --tool "$W/zwm-logging" "$ZWM_HDR" || fail "installing the old snippet failed"
kmake old-on || { show "$W/old-on.err"; fail "build with the old snippet failed"; }
ZWM_FAKE_VERSION=99.0.0 kmake old-upgrade || { show "$W/old-upgrade.err"; fail "old snippet: build after the upgrade failed"; }
grep -qxF "  LD [M]  $ko" "$W/old-upgrade.out" && grep -qxF "  ZWM [M] $ko" "$W/old-upgrade.out" || fail "old snippet: the upgrade did not relink"
! btf_step_ran old-upgrade || fail "old snippet: the BTF step ran after the upgrade: the control does not show the defect"
rc=0; ZWM_FAKE_VERSION='1.2 (Debian 1.2-1)' kmake old-parens || rc=$?
[ "$rc" != 0 ] && grep -q 'Syntax error: "(" unexpected' "$W/old-parens.err" ||
	{ show "$W/old-parens.err"; fail "old snippet: a --version with parentheses did not break the link"; }
ok "control (8f72ccd's snippet): an upgrade relinks without the BTF step (no 'Skipping BTF generation' line); '1.2 (Debian 1.2-1)' fails the link: $(grep -m1 -o 'Syntax error.*' "$W/old-parens.err")"
"$hook" -q --uninstall "$ZWM_HDR" && "$hook" -q --tool "$W/zwm-logging" "$ZWM_HDR" || fail "re-installing the current snippet failed"
kmake restored || { show "$W/restored.err"; fail "build with the current snippet restored failed"; }
btf_step_ran restored || fail "switching back to the current snippet did not rerun the BTF step"
expect_processed "$ko" "current snippet back"
ok "back to the current snippet (its stamp older than the module: a relink for the old hook's link command alone): the hook runs the BTF step itself, then the tool"

finish
