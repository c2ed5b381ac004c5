#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# Kbuild hook with Linux 7.2's real Kbuild files (Debian sid
# linux-kbuild-7.2.*, linux-headers-7.2.*-common/-amd64).
#
# A full 7.2 module build cannot run on bookworm (Debian's 7.2 headers want
# gcc-16 and sid's glibc).  So this runs 7.2's own, hooked
# scripts/Makefile.modfinal the way the 7.2 top Makefile runs it for an M=
# build (cwd = module folder, srctree/objtree = the headers copy), with the
# 7.2 Kbuild.include/Makefile.lib/auto.conf, on zwm_test.o + zwm_test.mod.o
# compiled against the 6.1 headers.  The final link (ld -r with 7.2's
# module.lds), the hook and the tool are real; the compile steps are not
# rerun (make -o).  BTF is off but for one run (BTF=y), which checks that an
# upgrade reruns the BTF step: Debian's 7.2 headers ship a vmlinux (its
# .BTF), so gen-btf.sh really runs, here with bookworm's pahole 1.24
# (--btf_gen_floats, the flags 7.2 gives pahole <= 1.25); sid's
# resolve_btfids needs a newer glibc, so a stand-in takes pahole's BTF as it
# is (zwm_test has no .BTF_ids for it to resolve).
#
# Needs: ZWM_REPO ZWM_TOOL ZWM_KVER ZWM_WORK ZWM_ROOT (see lib.sh).
suite=kbuild72
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_cmd make gcc-12 ld readelf pahole
btf_size() { local h; h=$(readelf -S -W "$m/$ko" | awk '{ for (i = 1; i < NF; i++) if ($i == ".BTF") print $(i + 4) }'); echo $((16#${h:-0})); }

hook=$ZWM_ROOT/usr/sbin/install-kbuild-hook
fetch=$ZWM_REPO/scripts/fetch-debian-kernel.sh
W=$ZWM_WORK/kbuild72
rm -rf "$W"
mkdir -p "$W"

# --- the 7.2 Kbuild files ----------------------------------------------------------
[ -x "$fetch" ] || fail "$fetch missing: it fetches Debian sid's 7.2 packages"
"$fetch" sid amd64 >"$W/fetch1.out" 2>"$W/fetch1.err" || { show "$W/fetch1.err"; fail "fetch-debian-kernel.sh sid amd64 failed"; }
kroot=$(tail -n1 "$W/fetch1.out")
k72=$(cat "$kroot/../kver") || fail "no kver next to $kroot"
case "$k72" in 7.*-amd64) ;; *) fail "sid's kernel is $k72, not a 7.x amd64 kernel" ;; esac
abi=${k72%-amd64}
"$fetch" sid amd64 "linux-kbuild-$abi" "linux-headers-$abi-common" "linux-headers-$k72" >"$W/fetch2.out" 2>"$W/fetch2.err" ||
	{ show "$W/fetch2.err"; fail "fetching linux-kbuild-$abi and linux-headers-$k72 failed"; }
kroot=$(tail -n1 "$W/fetch2.out")
O=$(make_headers_copy "$W/root" "$kroot" "$k72")
mf=$(readlink -f "$O/scripts/Makefile.modfinal")
S=$(readlink -f "$O/../linux-headers-$abi-common")
[ -f "$S/Makefile" ] || fail "no -common tree for $k72"
grep -q '+$(call if_changed,ld_ko_o)' "$mf" && grep -q 'check_tracepoint' "$mf" ||
	fail "$mf does not have the 7.2 layout (if_changed,ld_ko_o + check_tracepoint)"
ok "7.2 Kbuild files from Debian sid ($k72): $mf has the 7.2 layout (plain if_changed, gen-btf.sh, check_tracepoint)"

# --- installer on the 7.2 layout ---------------------------------------------------------
orig=$(sha "$mf")
cp -- "$mf" "$W/Makefile.modfinal.orig"
"$hook" --tool "$ZWM_TOOL" "$O" "$S" >"$W/install.out" 2>&1 || { show "$W/install.out"; fail "install-kbuild-hook on 7.2 failed"; }
show "$W/install.out"
grep -q 'already handled above' "$W/install.out" || fail "arch tree and -common tree were not recognised as one Makefile.modfinal"
diff -u "$W/Makefile.modfinal.orig" "$mf" >"$W/hook.diff" || true
show "$W/hook.diff" "diff "
# the include must follow cmd_ld_ko_o's definition; the recipe line must be
# the last line of the %.ko recipe, after the BTF block and check_tracepoint
awk '/^[ \t]*cmd_ld_ko_o[ \t]*=/ { d = NR } /^include \$\(srctree\)\/scripts\/Makefile.zero-weak-mcount$/ { i = NR }
	/^\t\+\$\(call cmd,check_tracepoint\)$/ { c = NR } /^\t\+\$\(zero-weak-mcount-ko\)$/ { r = NR }
	END { exit !(d && i > d && c && r == c + 1) }' "$mf" || fail "hook lines not where expected in the 7.2 file"
ok "installer on 7.2: include after cmd_ld_ko_o, recipe line right after check_tracepoint (after BTF)"
"$hook" -q --uninstall "$O" || fail "--uninstall on 7.2 failed"
[ "$(sha "$mf")" = "$orig" ] || fail "--uninstall did not restore the 7.2 file"
"$hook" -q --tool "$ZWM_TOOL" "$O" || fail "re-install on 7.2 failed"
ok "--uninstall restores the 7.2 Makefile.modfinal byte for byte; re-installed"

# --- objects -----------------------------------------------------------------------------
m=$W/mod
mkdir -p "$m/build61"
cp -- "$ZWM_REPO"/testdata/zwm_test/Kbuild "$ZWM_REPO"/testdata/zwm_test/*.[ch] "$m/build61/"
make -C "/usr/src/linux-headers-$ZWM_KVER" M="$m/build61" modules >"$W/build61.log" 2>&1 ||
	{ show "$W/build61.log"; fail "compiling zwm_test against the (unhooked) $ZWM_KVER headers failed"; }
cp -- "$m/build61/zwm_test.o" "$m/build61/zwm_test.mod.o" "$m/"
gcc-12 -c -x c /dev/null -o "$m/.module-common.o"
echo zwm_test.o >"$m/modules.order"
ko=zwm_test.ko

# modfinal LOG [VAR=VALUE...]: run 7.2's modfinal as the 7.2 top Makefile
# does for M= (it exports quiet/KBUILD_VERBOSE, LD, KBUILD_LDFLAGS, ...).
# quiet/KBUILD_VERBOSE come from the caller's environment.
modfinal() {
	local n=$1
	shift
	(cd "$m" && make -f "$S/scripts/Makefile.modfinal" -o zwm_test.mod.o -o .module-common.o \
		srctree="$S" objtree="$O" SRCARCH=x86 LD=ld KBUILD_LDFLAGS="-m elf_x86_64" \
		CONFIG_SHELL=/bin/sh KBUILD_EXTMOD="$m" CONFIG_DEBUG_INFO_BTF_MODULES="${BTF:-}" \
		PAHOLE=pahole PAHOLE_FLAGS=--btf_gen_floats RESOLVE_BTFIDS="$W/resolve_btfids" OBJCOPY=objcopy "$@") >"$W/$n.out" 2>"$W/$n.err"
}
export Q=@ quiet=quiet_ KBUILD_VERBOSE=0
# gen-btf.sh runs "resolve_btfids ... --btf BTF1 ELF" and embeds ELF.BTF
cat >"$W/resolve_btfids" <<'EOF'
#!/bin/sh
btf="" prev=""
for a; do [ "$prev" = --btf ] && btf=$a; prev=$a; done
[ -n "$btf" ] && cp -- "$btf" "$prev.BTF"
EOF
chmod +x "$W/resolve_btfids"

modfinal first || { show "$W/first.err"; fail "7.2 modfinal with the hook failed"; }
show "$W/first.out"
grep -qxF "  LD [M]  $ko" "$W/first.out" && grep -qxF "  ZWM [M] $ko" "$W/first.out" || fail "7.2: no LD/ZWM quiet lines"
stamp=$m/.zero-weak-mcount.ko.stamp
printf 'tool %s\nflags %s\n%s\n' "$O/tools/zero-weak-mcount/zero-weak-mcount" \
	"--kconfig $O/include/config/auto.conf --section __mcount_loc" "$("$ZWM_TOOL" --version)" >"$W/stamp.want"
cmp -s "$W/stamp.want" "$stamp" || { show "$stamp" "stamp "; fail "7.2: the stamp in the module folder does not hold tool, flags and version"; }
grep -q "^savedcmd_$ko := ld -r .* zwm_test.mod.o .module-common.o\$" "$m/.$ko.cmd" ||
	{ show "$m/.$ko.cmd"; fail "7.2: the saved link command is not the plain ld -r (the hook must not change it)"; }
expect_processed "$m/$ko" "7.2 modfinal output"
ok "7.2: quiet lines 'LD [M]' + 'ZWM [M]'; the stamp (module folder) holds tool, flags and version; the link command is 7.2's own; --kconfig is the absolute 7.2 objtree path"

s1=$(sha "$m/$ko"); m1=$(mtime "$m/$ko")
sleep 1.1
modfinal second || fail "7.2 second run failed"
[ ! -s "$W/second.out" ] && [ "$(sha "$m/$ko")" = "$s1" ] && [ "$(mtime "$m/$ko")" = "$m1" ] ||
	{ show "$W/second.out"; fail "7.2: second run without changes did something"; }
ok "7.2: second run with no change prints nothing and leaves the .ko (sha256, mtime) alone"

touch_later "$m/zwm_test.o"
modfinal touched || fail "7.2 run after touch failed"
grep -qxF "  ZWM [M] $ko" "$W/touched.out" || fail "7.2: a newer zwm_test.o did not reprocess"
expect_processed "$m/$ko" "7.2 after relink"

touch_later "$m/zwm_test.o"
Q='' quiet='' KBUILD_VERBOSE=1 modfinal v1 || fail "7.2 V=1 run failed"
grep -qxF "# ZWM [M] $ko" "$W/v1.out" || { show "$W/v1.out"; fail "7.2 V=1: no '# ZWM [M]' label"; }
grep -qE "zero-weak-mcount --kconfig [^ ]+ --section __mcount_loc $ko\$" "$W/v1.out" || { show "$W/v1.out"; fail "7.2 V=1: command not shown (or shown with -v)"; }
! grep -q 'zeroed [0-9]* of [0-9]*' "$W/v1.err" || { show "$W/v1.err"; fail "7.2 V=1: the tool reported as under -v"; }
ok "7.2 V=1: '# ZWM [M] $ko' + the command, without -v (Kbuild's V=1 only echoes commands)"

touch_later "$m/zwm_test.o"
quiet=silent_ modfinal silent || fail "7.2 silent run failed"
# The module was compiled against the 6.1 headers (see the top), so the
# tool rightly warns that the 7.2 config is another release's; that line
# must be there, and nothing else may be.
grep -q -- '--kconfig is for kernel 7\.2\.[0-9]* (from its header), this module for 6\.1\.' "$W/silent.err" ||
	{ show "$W/silent.err"; fail "7.2 make -s: no warning that the 7.2 config is not the 6.1 module's"; }
grep -v -- '--kconfig is for kernel 7\.2\.[0-9]* (from its header), this module for 6\.1\.' "$W/silent.err" >"$W/silent.rest" || true
[ ! -s "$W/silent.out" ] && [ ! -s "$W/silent.rest" ] || { show "$W/silent.out"; show "$W/silent.rest"; fail "7.2 make -s printed something"; }
expect_processed "$m/$ko" "7.2 silent relink"
ok "7.2 make -s (quiet=silent_): stdout empty, stderr only the release warning"

modfinal flags ZERO_WEAK_MCOUNT_FLAGS=--signed=refuse || fail "7.2 flags run failed"
grep -qxF "  ZWM [M] $ko" "$W/flags.out" && grep -qxF "  LD [M]  $ko" "$W/flags.out" || fail "7.2: a flag change did not relink"
ok "7.2: a flag change relinks and reprocesses"

# the callsite section follows include/linux/ftrace.h: a stub tool logs its
# arguments when KBUILD_CPPFLAGS (arm64, riscv, loongarch, powerpc) or
# KBUILD_CFLAGS (parisc) carries -DCC_USING_PATCHABLE_FUNCTION_ENTRY
cat >"$W/zwm-args" <<EOF
#!/bin/sh
[ "\$1" = --version ] && exec "$ZWM_TOOL" --version
printf '%s\n' "\$*" >>"$W/args.log"
EOF
chmod +x "$W/zwm-args"
modfinal pfe1 ZERO_WEAK_MCOUNT="$W/zwm-args" KBUILD_CPPFLAGS="-D__KERNEL__ -DCC_USING_PATCHABLE_FUNCTION_ENTRY" || fail "PFE run (CPPFLAGS) failed"
touch_later "$m/zwm_test.o" # same recorded command as pfe1: only a newer input reruns it
modfinal pfe2 ZERO_WEAK_MCOUNT="$W/zwm-args" KBUILD_CFLAGS="-O2 -DCC_USING_PATCHABLE_FUNCTION_ENTRY" || fail "PFE run (CFLAGS) failed"
modfinal pfe3 ZERO_WEAK_MCOUNT="$W/zwm-args" || fail "non-PFE run failed"
[ "$(grep -c -- '--section __patchable_function_entries' "$W/args.log")" = 2 ] &&
	[ "$(sed -n 3p "$W/args.log" | grep -c -- '--section __mcount_loc')" = 1 ] ||
	{ show "$W/args.log"; fail "--section is not derived from -DCC_USING_PATCHABLE_FUNCTION_ENTRY"; }
show "$W/args.log" "tool args: "
ok "--section __patchable_function_entries with -DCC_USING_PATCHABLE_FUNCTION_ENTRY in KBUILD_CPPFLAGS or KBUILD_CFLAGS, else __mcount_loc"
modfinal back || fail "run after the PFE tests failed"
expect_processed "$m/$ko" "7.2 after the section tests"

s_ok=$(sha "$m/$ko")
rc=0; modfinal missing ZERO_WEAK_MCOUNT=/nonexistent/zero-weak-mcount || rc=$?
[ "$rc" != 0 ] && ! grep -q 'LD \[M\]' "$W/missing.out" && [ "$(sha "$m/$ko")" = "$s_ok" ] ||
	fail "7.2: a missing tool did not fail the build before the link (rc $rc)"
grep -q "was not found or did not run" "$W/missing.err" || fail "7.2: no error message for the missing tool"
rc=0; modfinal missing2 ZERO_WEAK_MCOUNT=/nonexistent/zero-weak-mcount || rc=$?
[ "$rc" != 0 ] || fail "7.2: rerun with the missing tool succeeded"
modfinal recover || fail "7.2: recovery run failed"
expect_processed "$m/$ko" "7.2 after recovery"
ok "7.2: missing tool fails (exit $rc) before any link, rerun fails again; with the tool back it is processed"

# a distribution's version text: the BTF step and the tool rerun, the
# module keeps .BTF, the text stays data
cat >"$W/zwm-v" <<EOF
#!/bin/sh
[ "\$1" = --version ] && { echo "zero-weak-mcount \$ZWM_FAKE_VERSION"; exit 0; }
exec "$ZWM_TOOL" "\$@"
EOF
chmod +x "$W/zwm-v"
v='1.2 (Debian 1.2-1) $(shell touch '"$W"'/pwned) `touch '"$W"'/pwned2`'
ZWM_FAKE_VERSION=$v BTF=y modfinal parens ZERO_WEAK_MCOUNT="$W/zwm-v" ||
	{ show "$W/parens.err"; fail "7.2: a --version with parentheses broke the build"; }
grep -qxF "  LD [M]  $ko" "$W/parens.out" && grep -qxF "  ZWM [M] $ko" "$W/parens.out" &&
	grep -qxF "  BTF [M] $ko" "$W/parens.out" && [ "$(btf_size)" -gt 0 ] ||
	{ show "$W/parens.out"; show "$W/parens.err"; fail "7.2: the new version did not relink, rerun the BTF step and the tool"; }
grep -qxF "zero-weak-mcount $v" "$stamp" && [ ! -e "$W/pwned" ] && [ ! -e "$W/pwned2" ] ||
	fail "7.2: the version text is not kept verbatim, or it ran"
expect_processed "$m/$ko" "7.2 after a --version with parentheses"
ok "7.2: --version '$v' relinks, reruns the BTF step (gen-btf.sh: .BTF $(btf_size) bytes) and the tool; kept verbatim in the stamp, never run"

finish
