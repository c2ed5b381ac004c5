#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Kbuild hook with Debian trixie's 6.12 Kbuild files (linux-kbuild-6.12.*,
# linux-headers-6.12.*-common/-amd64): the layout between 6.1 and 7.2 (a
# %.ko pattern rule with if_changed_except, modfinal run in the kernel's
# objtree, external modules named through $(extmod_prefix)).
#
# trixie's headers want gcc-14, which bookworm lacks, so this runs 6.12's
# own hooked scripts/Makefile.modfinal the way the 6.12 top Makefile runs it
# for an M= build (cwd = the headers copy, KBUILD_EXTMOD/extmod_prefix/
# MODORDER = the module folder), on zwm_test.o + zwm_test.mod.o compiled
# against the 6.1 headers.  trixie's headers ship a vmlinux (its .BTF, for
# module BTF), so modfinal's BTF step really runs there, for DKMS modules
# too: here with bookworm's pahole 1.24 (--btf_gen_floats, the flags 6.12
# gives pahole <= 1.25) in place of trixie's 1.30, and without
# resolve_btfids (trixie's needs glibc 2.38; zwm_test has no .BTF_ids
# anyway).  The link, the BTF step, the hook and the tool are real.
# What it proves: the stamp lands in the module folder, not in the headers;
# an upgrade (a --version with parentheses) or new flags relink, rerun the
# BTF step and the tool, and the module keeps .BTF; the control, the
# snippet of 8f72ccd, relinks without the BTF step (the module loses .BTF)
# and breaks on the parentheses.
#
# Needs: ZWM_REPO ZWM_TOOL ZWM_KVER ZWM_WORK ZWM_ROOT (see lib.sh).
suite=kbuild612
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_cmd make gcc-12 ld readelf git pahole

hook=$ZWM_ROOT/usr/sbin/install-kbuild-hook
fetch=$ZWM_REPO/scripts/fetch-debian-kernel.sh
W=$ZWM_WORK/kbuild612
rm -rf "$W"
mkdir -p "$W"

# --- the 6.12 Kbuild files ---------------------------------------------------------
"$fetch" trixie amd64 >"$W/fetch1.out" 2>"$W/fetch1.err" || { show "$W/fetch1.err"; fail "fetch-debian-kernel.sh trixie amd64 failed"; }
kroot=$(tail -n1 "$W/fetch1.out")
k=$(cat "$kroot/../kver") || fail "no kver next to $kroot"
case "$k" in 6.12.*-amd64) ;; *) fail "trixie's kernel is $k, not a 6.12 amd64 kernel" ;; esac
abi=${k%-amd64}
"$fetch" trixie amd64 "linux-kbuild-$abi" "linux-headers-$abi-common" "linux-headers-$k" >"$W/fetch2.out" 2>"$W/fetch2.err" ||
	{ show "$W/fetch2.err"; fail "fetching linux-kbuild-$abi and linux-headers-$k failed"; }
kroot=$(tail -n1 "$W/fetch2.out")
O=$(make_headers_copy "$W/root" "$kroot" "$k")
mf=$(readlink -f "$O/scripts/Makefile.modfinal")
S=$(readlink -f "$O/../linux-headers-$abi-common")
[ -f "$S/Makefile" ] || fail "no -common tree for $k"
grep -q '^%\.ko: .*\$(extmod_prefix)\.module-common\.o' "$mf" && grep -q 'if_changed_except,ld_ko_o,vmlinux' "$mf" ||
	fail "$mf does not have the 6.12 layout (%.ko rule with \$(extmod_prefix), if_changed_except)"
grep -qx 'CONFIG_DEBUG_INFO_BTF_MODULES=y' "$O/include/config/auto.conf" || fail "$k does not have CONFIG_DEBUG_INFO_BTF_MODULES=y"
[ -f "$O/vmlinux" ] || fail "trixie's headers have no vmlinux: the BTF step would only skip"
ok "6.12 Kbuild files from Debian trixie ($k): %.ko pattern rule, if_changed_except, DEBUG_INFO_BTF_MODULES=y, a vmlinux with .BTF in the headers"

old=$W/old-snippet
git -C "$ZWM_REPO" show 8f72ccd:Makefile.snippet >"$old" 2>"$W/git.err" ||
	{ show "$W/git.err"; fail "no Makefile.snippet at 8f72ccd (the control needs the checkout's history)"; }

# --- objects -------------------------------------------------------------------------
m=$W/mod
mkdir -p "$m/build61"
cp -- "$ZWM_REPO"/testdata/zwm_test/Kbuild "$ZWM_REPO"/testdata/zwm_test/*.[ch] "$m/build61/"
${ZWM_KBUILD_LOCK:+flock "$ZWM_KBUILD_LOCK"} make -C "/usr/src/linux-headers-$ZWM_KVER" M="$m/build61" modules >"$W/build61.log" 2>&1 ||
	{ show "$W/build61.log"; fail "compiling zwm_test against the (unhooked) $ZWM_KVER headers failed"; }
cp -- "$m/build61/zwm_test.o" "$m/build61/zwm_test.mod.o" "$m/"
gcc-12 -c -x c /dev/null -o "$m/.module-common.o"
echo "$m/zwm_test.o" >"$m/modules.order"
ko=$m/zwm_test.ko
stamp=$m/.zero-weak-mcount.ko.stamp

# A wrapper stands in for the installed tool: ZWM_FAKE_VERSION makes it
# report another version; every processing call is logged.
cat >"$W/zwm" <<EOF
#!/bin/sh
case "\$1" in
--version) [ -n "\${ZWM_FAKE_VERSION:-}" ] && { echo "zero-weak-mcount \$ZWM_FAKE_VERSION"; exit 0; } ;;
*) printf '%s\n' "\$*" >>"$W/calls.log" ;;
esac
exec "$ZWM_TOOL" "\$@"
EOF
chmod +x "$W/zwm"

# modfinal LOG [VAR=VALUE...]: run 6.12's modfinal as its top Makefile does
# for M= (cwd = objtree; it exports extmod_prefix, MODORDER, LD, ...).
modfinal() {
	local n=$1
	shift
	: >"$W/calls.log"
	(cd "$O" && make -f "$S/scripts/Makefile.modfinal" -o "$m/zwm_test.mod.o" -o "$m/.module-common.o" \
		srctree="$S" objtree=. SRCARCH=x86 LD=ld KBUILD_LDFLAGS="-m elf_x86_64" CONFIG_SHELL=/bin/sh \
		KBUILD_EXTMOD="$m" extmod_prefix="$m/" MODORDER="$m/modules.order" KBUILD_BUILTIN= \
		PAHOLE=pahole PAHOLE_FLAGS=--btf_gen_floats OBJCOPY=objcopy RESOLVE_BTFIDS=: \
		Q=@ quiet=quiet_ KBUILD_VERBOSE=0 ZERO_WEAK_MCOUNT="$W/zwm" "$@") >"$W/$n.out" 2>"$W/$n.err"
}
relinked() { grep -qxF "  LD [M]  $ko" "$W/$1.out" && grep -qxF "  ZWM [M] $ko" "$W/$1.out"; }
btf_step_ran() { grep -qxF "  BTF [M] $ko" "$W/$1.out"; }
btf_size() { local h; h=$(readelf -S -W "$ko" | awk '{ for (i = 1; i < NF; i++) if ($i == ".BTF") print $(i + 4) }'); echo $((16#${h:-0})); }
has_btf() { [ "$(btf_size)" -gt 0 ]; }
calls() { wc -l <"$W/calls.log"; }

# --- the current snippet -----------------------------------------------------------------
"$hook" -q "$O" || fail "install-kbuild-hook on 6.12 failed"
modfinal first || { show "$W/first.err"; fail "6.12 modfinal with the hook failed"; }
show "$W/first.out"
relinked first && btf_step_ran first && has_btf || { show "$W/first.err"; fail "6.12: no LD/ZWM lines, no BTF step or no .BTF"; }
[ "$(calls)" = 1 ] || fail "6.12: the tool was called $(calls) times"
expect_processed "$ko" "6.12 modfinal output"
[ -f "$stamp" ] || fail "6.12: no stamp $stamp"
[ -z "$(find "$W/root" -name '.zero-weak-mcount.ko.stamp')" ] || fail "6.12: a stamp was written into the headers copy"
ok "6.12: LD [M], BTF [M] (.BTF: $(btf_size) bytes), ZWM [M]; the stamp is in the module folder, none in the headers"

s1=$(sha "$ko"); m1=$(mtime "$ko"); t1=$(mtime "$stamp")
sleep 1.1
modfinal same || fail "6.12: second run failed"
[ ! -s "$W/same.out" ] && [ ! -s "$W/same.err" ] && [ "$(calls)" = 0 ] &&
	[ "$(sha "$ko")" = "$s1" ] && [ "$(mtime "$ko")" = "$m1" ] && [ "$(mtime "$stamp")" = "$t1" ] ||
	{ show "$W/same.out"; show "$W/same.err"; fail "6.12: a run with no change did something"; }
ok "6.12: no change: nothing printed, tool not called, .ko and stamp keep bytes and mtime"

v='1.2 (Debian 1.2-1) $(shell touch '"$W"'/pwned) `touch '"$W"'/pwned2`'
ZWM_FAKE_VERSION=$v modfinal upgrade || { show "$W/upgrade.err"; fail "6.12: run with the 'upgraded' tool failed"; }
relinked upgrade && btf_step_ran upgrade && has_btf && [ "$(calls)" = 1 ] ||
	{ show "$W/upgrade.out"; show "$W/upgrade.err"; fail "6.12: the upgrade did not relink, rerun BTF and the tool"; }
grep -qxF "zero-weak-mcount $v" "$stamp" || fail "6.12: the stamp does not hold the version verbatim"
[ ! -e "$W/pwned" ] && [ ! -e "$W/pwned2" ] || fail "6.12: the version text ran as make or shell code"
expect_processed "$ko" "6.12 after the upgrade"
ZWM_FAKE_VERSION=$v modfinal upgrade-same || fail "6.12: second run with that version failed"
[ ! -s "$W/upgrade-same.out" ] || fail "6.12: the same version again did something"
ok "6.12: --version '$v' relinks, reruns the BTF step (.BTF: $(btf_size) bytes) and the tool, is kept verbatim and never run; the same again does nothing"

ZWM_FAKE_VERSION=$v modfinal flags ZERO_WEAK_MCOUNT_FLAGS=--signed=strip || fail "6.12: flags run failed"
relinked flags && btf_step_ran flags && has_btf || fail "6.12: a flag change did not relink and rerun BTF"
grep -q -- '--signed=strip' "$stamp" || fail "6.12: flags not in the stamp"
ok "6.12: ZERO_WEAK_MCOUNT_FLAGS=--signed=strip relinks, reruns the BTF step and the tool"

s1=$(sha "$ko")
rc=0; modfinal missing ZERO_WEAK_MCOUNT=/nonexistent/zero-weak-mcount || rc=$?
[ "$rc" != 0 ] && ! grep -q 'LD \[M\]' "$W/missing.out" && [ "$(sha "$ko")" = "$s1" ] ||
	{ show "$W/missing.err"; fail "6.12: a missing tool did not fail before the link"; }
grep -q "error: zero-weak-mcount: '/nonexistent/zero-weak-mcount' was not found or did not run" "$W/missing.err" ||
	{ show "$W/missing.err"; fail "6.12: no error message for the missing tool"; }
ok "6.12: a missing tool fails the run (exit $rc) before any link, naming the tool"

# --- the control: 8f72ccd's snippet -------------------------------------------------------------
"$hook" -q --uninstall "$O" && "$hook" -q --snippet "$old" "$O" || fail "installing the old snippet failed"
modfinal old-on || { show "$W/old-on.err"; fail "6.12: the old snippet failed"; }
ZWM_FAKE_VERSION=99.0.0 modfinal old-upgrade || { show "$W/old-upgrade.err"; fail "6.12: the old snippet failed on the upgrade"; }
relinked old-upgrade || fail "6.12 control: the upgrade did not relink"
! btf_step_ran old-upgrade && ! has_btf || fail "6.12 control: the module kept or regained .BTF: the control does not show the defect"
rc=0; ZWM_FAKE_VERSION='1.2 (Debian 1.2-1)' modfinal old-parens || rc=$?
[ "$rc" != 0 ] && grep -q 'Syntax error: "(" unexpected' "$W/old-parens.err" ||
	{ show "$W/old-parens.err"; fail "6.12 control: parentheses did not break the link"; }
ok "6.12 control (8f72ccd's snippet): the upgrade relinks without the BTF step and the module has no .BTF; '1.2 (Debian 1.2-1)' fails: $(grep -m1 -o 'Syntax error.*' "$W/old-parens.err")"
# back to the current snippet, with the stamp of before the control: only
# the link command changed, so modfinal skips BTF and the hook runs it
"$hook" -q --uninstall "$O" && "$hook" -q "$O" || fail "re-installing the current snippet failed"
ZWM_FAKE_VERSION=$v modfinal restored ZERO_WEAK_MCOUNT_FLAGS=--signed=strip || { show "$W/restored.err"; fail "6.12: the current snippet failed after the control"; }
relinked restored && btf_step_ran restored && has_btf || { show "$W/restored.out"; fail "6.12: a relink for the link command alone left the module without BTF"; }
expect_processed "$ko" "6.12 after the control"
ok "6.12: a relink for a changed link command alone (the old hook's .cmd): the hook runs the BTF step itself (.BTF $(btf_size) bytes), then the tool"
"$hook" -q --uninstall "$O" || fail "--uninstall on 6.12 failed"

finish
