#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The Kbuild hook against the real Kbuild files of three kernel releases:
# one table (below), one sequence of checks (numbered in the code).  What
# each release's files are, how its module is linked and what the sequence
# proves, with its negative control: docs/kbuild.md, "Headers trees".
# trixie's and sid's headers want a newer gcc and glibc than bookworm has,
# so for 6.12 and 7.2 the objects come from the 6.1 headers and only
# modfinal runs (make -o keeps them): the link, the BTF step (bookworm's
# pahole 1.24; a stand-in for resolve_btfids, whose Debian build needs
# glibc 2.38: zwm_test has no .BTF_ids), the hook and the tool are real.
#
# Usage: kbuild.sh 6.1|6.12|7.2     (run by scripts/integration-test.sh)
# Needs: ZWM_REPO ZWM_TOOL ZWM_KVER ZWM_WORK ZWM_ROOT, and ZWM_HDR for 6.1
# (see scripts/lib.sh).  6.1 leaves ZWM_HDR hooked: the dkms suite builds there.
rel=${1:-}
# the table: suite name, where the Kbuild files come from, the kernel
# release they must be, BTF (notice: no vmlinux, modfinal says it skips;
# step: the step runs; off: CONFIG_DEBUG_INFO_BTF_MODULES unset but for
# one run), and whether the 8f72ccd control runs
case "$rel" in
6.1) suite=kbuild from=host kpat='6.1.*-amd64' btf=notice control=1 ;;
6.12) suite=kbuild612 from=trixie kpat='6.12.*-amd64' btf=step control=1 ;;
7.2) suite=kbuild72 from=sid kpat='7.*-amd64' btf=off control=0 ;;
*) echo "usage: kbuild.sh 6.1|6.12|7.2" >&2; exit 2 ;;
esac
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
suite_init "$suite"
need_cmd make gcc-12 ld git python3
[ "$from" = host ] || need_cmd pahole

hook=$ZWM_ROOT/usr/sbin/install-kbuild-hook

# --- the Kbuild files ----------------------------------------------------------------
if [ "$from" = host ]; then
	O=${ZWM_HDR:?} k=$ZWM_KVER
	# the installer's --dry-run on the host's own headers changes nothing
	host_build=/lib/modules/$k/build
	host_mf=$(readlink -f "$host_build/scripts/Makefile.modfinal")
	before=$(sha "$host_mf")
	"$hook" --dry-run "$host_build" >"$W/dry.out" 2>&1 || { show "$W/dry.out"; fail "install-kbuild-hook --dry-run $host_build failed"; }
	show "$W/dry.out"
	[ "$(sha "$host_mf")" = "$before" ] || fail "--dry-run changed $host_mf"
	grep -q "would hook" "$W/dry.out" || grep -q "already hooked" "$W/dry.out" ||
		fail "--dry-run did not say what it would do"
	ok "installer --dry-run on the host's $host_build resolves to $host_mf and changes nothing"
else
	fetch=$ZWM_REPO/scripts/fetch-debian-kernel.sh
	"$fetch" "$from" amd64 >"$W/fetch1.out" 2>"$W/fetch1.err" || { show "$W/fetch1.err"; fail "fetch-debian-kernel.sh $from amd64 failed"; }
	kroot=$(tail -n1 "$W/fetch1.out")
	k=$(cat "$kroot/../kver") || fail "no kver next to $kroot"
	# shellcheck disable=SC2254 # kpat is a pattern
	case "$k" in $kpat) ;; *) fail "$from's kernel is $k, not a $kpat kernel" ;; esac
	abi=${k%-amd64}
	"$fetch" "$from" amd64 "linux-kbuild-$abi" "linux-headers-$abi-common" "linux-headers-$k" >"$W/fetch2.out" 2>"$W/fetch2.err" ||
		{ show "$W/fetch2.err"; fail "fetching linux-kbuild-$abi and linux-headers-$k failed"; }
	O=$(make_headers_copy "$W/root" "$(tail -n1 "$W/fetch2.out")" "$k")
fi
S=$(readlink -f "$O/../linux-headers-${k%-amd64}-common")
[ -f "$S/Makefile" ] || fail "no -common tree for $k"
mf=$(readlink -f "$O/scripts/Makefile.modfinal")
case "$mf" in "$ZWM_WORK"/*) ;; *) fail "the headers copy's Makefile.modfinal resolves outside the copy: $mf" ;; esac
case "$rel" in
6.12)
	grep -q '^%\.ko: .*\$(extmod_prefix)\.module-common\.o' "$mf" && grep -q 'if_changed_except,ld_ko_o,vmlinux' "$mf" ||
		fail "$mf does not have the 6.12 layout (%.ko rule with \$(extmod_prefix), if_changed_except)"
	grep -qx 'CONFIG_DEBUG_INFO_BTF_MODULES=y' "$O/include/config/auto.conf" || fail "$k does not have CONFIG_DEBUG_INFO_BTF_MODULES=y"
	[ -f "$O/vmlinux" ] || fail "trixie's headers have no vmlinux: the BTF step would only skip"
	ok "6.12 Kbuild files from Debian trixie ($k): %.ko pattern rule, if_changed_except, DEBUG_INFO_BTF_MODULES=y, a vmlinux with .BTF in the headers"
	;;
7.2)
	grep -q '+$(call if_changed,ld_ko_o)' "$mf" && grep -q 'check_tracepoint' "$mf" ||
		fail "$mf does not have the 7.2 layout (if_changed,ld_ko_o + check_tracepoint)"
	ok "7.2 Kbuild files from Debian sid ($k): $mf has the 7.2 layout (plain if_changed, gen-btf.sh, check_tracepoint)"
	;;
esac

# A wrapper stands in as the distribution's binary (the installer copies it
# to <headers>/tools/zero-weak-mcount/, where the snippet looks first): it
# logs each processing call to $W/calls.log and runs the real tool.
# ZWM_FAKE_VERSION makes it report another version, like an upgraded tool.
# Called as zwm-args it only logs its arguments to $W/args.log; as
# zwm-failing it fails.
cat >"$W/zwm" <<EOF
#!/bin/sh
case "\$1|\$0" in
--version*) [ -n "\${ZWM_FAKE_VERSION:-}" ] && { echo "zero-weak-mcount \$ZWM_FAKE_VERSION"; exit 0; } ;;
*-args) printf '%s\n' "\$*" >>"$W/args.log"; exit 0 ;;
*-failing) echo "zwm-failing: simulated failure" >&2; exit 1 ;;
*) printf '%s\n' "\$*" >>"$W/calls.log" ;;
esac
exec "$ZWM_TOOL" "\$@"
EOF
chmod +x "$W/zwm"
ln -s zwm "$W/zwm-args"
ln -s zwm "$W/zwm-failing"
calls() { wc -l <"$W/calls.log"; }

# --- the installer ------------------------------------------------------------------
orig=$(sha "$mf")
cp -- "$mf" "$W/Makefile.modfinal.orig"
"$hook" --tool "$W/zwm" "$O" "$S" >"$W/install.out" 2>&1 || { show "$W/install.out"; fail "install-kbuild-hook failed"; }
show "$W/install.out"
grep -q "hooked: include at line" "$W/install.out" || fail "installer did not report the hook lines"
grep -q 'already handled above' "$W/install.out" || fail "arch tree and -common tree were not recognised as one Makefile.modfinal"
[ "$(grep -cxF 'include $(srctree)/scripts/Makefile.zero-weak-mcount' "$mf")" = 1 ] || fail "include line missing in $mf"
[ "$(grep -cxF "$(printf '\t+$(zero-weak-mcount-ko)')" "$mf")" = 1 ] || fail "recipe line missing in $mf"
[ -f "$(dirname "$mf")/Makefile.zero-weak-mcount" ] || fail "snippet not copied next to $mf"
diff -u "$W/Makefile.modfinal.orig" "$mf" >"$W/hook.diff" || true
show "$W/hook.diff" "diff "
# the include follows cmd_ld_ko_o's definition; the recipe line ends the
# .ko recipe (after the BTF block; in 7.2 right after check_tracepoint)
awk -v rel="$rel" '/^[ \t]*cmd_ld_ko_o[ \t]*[+:]?=/ { d = NR } /^include \$\(srctree\)\/scripts\/Makefile.zero-weak-mcount$/ { i = NR }
	/^\t\+\$\(call cmd,check_tracepoint\)$/ { c = NR } /^\t\+\$\(zero-weak-mcount-ko\)$/ { r = NR; getline; n = $0 }
	END { exit !(d && i > d && r && n !~ /^\t/ && (rel != "7.2" || r == c + 1)) }' "$mf" ||
	fail "hook lines not where expected in $mf"
ok "installer hooked $mf once through the arch and the -common tree: the include after cmd_ld_ko_o, the recipe line last in the .ko recipe; snippet copied"

h1=$(sha "$mf")
"$hook" "$O" >"$W/install2.out" 2>&1 || fail "second install failed"
grep -q "already hooked" "$W/install2.out" || { show "$W/install2.out"; fail "second install did not say 'already hooked'"; }
[ "$(sha "$mf")" = "$h1" ] || fail "second install changed $mf"
"$hook" --status "$O" >/dev/null || fail "--status says not hooked"
ok "installer is idempotent (second run: 'already hooked', file unchanged; --status exits 0)"

"$hook" --uninstall "$O" >"$W/uninstall.out" 2>&1 || { show "$W/uninstall.out"; fail "--uninstall failed"; }
[ "$(sha "$mf")" = "$orig" ] || fail "--uninstall did not restore $mf byte for byte"
[ ! -e "$(dirname "$mf")/Makefile.zero-weak-mcount" ] || fail "--uninstall left the snippet behind"
[ ! -e "$O/tools/zero-weak-mcount/zero-weak-mcount" ] || fail "--uninstall left the tool copy behind"
rc=0; "$hook" --status "$O" >/dev/null 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "--status after --uninstall exits $rc, expected 1"
"$hook" --uninstall "$O" >/dev/null 2>&1 || fail "a second --uninstall failed"
ok "--uninstall restores Makefile.modfinal byte for byte (sha256 $orig), removes snippet and tool; repeatable"
"$hook" -q --tool "$W/zwm" "$O" || fail "re-install failed"

# --- the module -------------------------------------------------------------------------
# kb LOG [ARG...]: link the module as the release's Kbuild does (ARGs are
# make's: V=1 and -s become what the top Makefile passes modfinal);
# stdout and stderr go to $W/LOG.out and .err, the tool's calls to calls.log.
m=$W/mod
zwm_test_src "$m"
ko=$m/zwm_test.ko
if [ "$rel" = 6.1 ]; then
	kname=$ko input=$m/main.c
	kb() {
		local n=$1
		shift
		: >"$W/calls.log"
		locked make -C "$O" M="$m" "$@" modules >"$W/$n.out" 2>"$W/$n.err"
	}
else
	mkdir -p "$m/build61"
	mv -- "$m"/Kbuild "$m"/*.[ch] "$m/build61/"
	locked make -C "/usr/src/linux-headers-$ZWM_KVER" M="$m/build61" modules >"$W/build61.log" 2>&1 ||
		{ show "$W/build61.log"; fail "compiling zwm_test against the (unhooked) $ZWM_KVER headers failed"; }
	cp -- "$m/build61/zwm_test.o" "$m/build61/zwm_test.mod.o" "$m/"
	gcc-12 -c -x c /dev/null -o "$m/.module-common.o"
	input=$m/zwm_test.o
	# gen-btf.sh (7.2) runs "resolve_btfids ... --btf BTF1 ELF" and embeds ELF.BTF
	cat >"$W/resolve_btfids" <<'EOF'
#!/bin/sh
btf="" prev=""
for a; do [ "$prev" = --btf ] && btf=$a; prev=$a; done
[ -n "$btf" ] && cp -- "$btf" "$prev.BTF"
EOF
	chmod +x "$W/resolve_btfids"
	if [ "$rel" = 6.12 ]; then
		kname=$ko
		echo "$m/zwm_test.o" >"$m/modules.order"
		# cwd = objtree; it exports extmod_prefix, MODORDER, LD, ...
		run_modfinal() {
			(cd "$O" && make -f "$S/scripts/Makefile.modfinal" -o "$m/zwm_test.mod.o" -o "$m/.module-common.o" \
				srctree="$S" objtree=. SRCARCH=x86 LD=ld KBUILD_LDFLAGS="-m elf_x86_64" CONFIG_SHELL=/bin/sh \
				KBUILD_EXTMOD="$m" extmod_prefix="$m/" MODORDER="$m/modules.order" KBUILD_BUILTIN= \
				PAHOLE=pahole PAHOLE_FLAGS=--btf_gen_floats OBJCOPY=objcopy RESOLVE_BTFIDS=: "$@")
		}
	else
		kname=zwm_test.ko
		echo zwm_test.o >"$m/modules.order"
		# cwd = the module folder, srctree/objtree = the headers copy
		run_modfinal() {
			(cd "$m" && make -f "$S/scripts/Makefile.modfinal" -o zwm_test.mod.o -o .module-common.o \
				srctree="$S" objtree="$O" SRCARCH=x86 LD=ld KBUILD_LDFLAGS="-m elf_x86_64" \
				CONFIG_SHELL=/bin/sh KBUILD_EXTMOD="$m" CONFIG_DEBUG_INFO_BTF_MODULES="${BTF:-}" \
				PAHOLE=pahole PAHOLE_FLAGS=--btf_gen_floats RESOLVE_BTFIDS="$W/resolve_btfids" OBJCOPY=objcopy "$@")
		}
	fi
	kb() {
		local n=$1 a args=(Q=@ quiet=quiet_ KBUILD_VERBOSE=0)
		shift
		for a; do
			case "$a" in
			V=1) args+=(Q= quiet= KBUILD_VERBOSE=1) ;;
			-s) args+=(quiet=silent_) ;;
			*) args+=("$a") ;;
			esac
		done
		: >"$W/calls.log"
		run_modfinal "${args[@]}" >"$W/$n.out" 2>"$W/$n.err"
	}
fi
stamp=$m/.zero-weak-mcount.ko.stamp
relinked() { grep -qxF "  LD [M]  $kname" "$W/$1.out" && grep -qxF "  ZWM [M] $kname" "$W/$1.out"; }
# modfinal's BTF step ran: without a vmlinux it says it skips; with one,
# its quiet line
btf_ran() {
	if [ "$btf" = notice ]; then
		grep -qxF "Skipping BTF generation for $ko due to unavailability of vmlinux" "$W/$1.err"
	else
		grep -qxF "  BTF [M] $kname" "$W/$1.out"
	fi
}
btf_size() { python3 "$GUEST/guest.py" secsize "$ko" .BTF; }
# the BTF step ran where the release runs it, and (with a vmlinux) the
# module has .BTF
btf_ok() {
	case "$btf${BTF:-}" in
	notice) btf_ran "$1" ;;
	step | offy) btf_ran "$1" && [ "$(btf_size)" -gt 0 ] ;;
	*) true ;;
	esac
}
# stderr lines that are not ours: Debian 6.1's BTF notice (no vmlinux), and
# the tool's warning that a 7.2 or 6.12 config is not the 6.1 module's
relwarn="--kconfig is for kernel ${rel//./\\.}\.[0-9]* (from its header), this module for 6\.1\."
own_stderr() {
	local not=(-e '^Skipping BTF generation for .* due to unavailability of vmlinux$')
	[ "$rel" = 6.1 ] || not+=(-e "$relwarn")
	grep -v "${not[@]}" "$1" || true
}
# nothing relinked (no quiet line, no ld -r under V=1), the tool not run,
# nothing of ours said
idle() {
	! grep -qE 'LD \[M\]|ZWM \[M\]|BTF \[M\]|(^| )ld -r |zero-weak-mcount .*--section ' "$W/$1.out" &&
		[ "$(calls)" = 0 ] && [ -z "$(own_stderr "$W/$1.err")" ]
}

# 1. control: the step switched off (ZERO_WEAK_MCOUNT= empty)
kb control ZERO_WEAK_MCOUNT= || { show "$W/control.err"; fail "control build (ZERO_WEAK_MCOUNT=) failed"; }
! grep -q 'ZWM \[M\]' "$W/control.out" || fail "ZERO_WEAK_MCOUNT= still ran the step"
[ "$(calls)" = 0 ] || fail "ZERO_WEAK_MCOUNT= still called the tool"
expect_unprocessed "$ko" "$rel control build (ZERO_WEAK_MCOUNT= turns the step off)"
cp -- "$ko" "$W/control.ko"

# 2. the step on: a relink, processed
kb first || { show "$W/first.err"; fail "hooked build failed"; }
show "$W/first.out"
relinked first || fail "switching the step on did not relink with '  LD [M]  $kname' + '  ZWM [M] $kname'"
btf_ok first || { show "$W/first.err"; fail "the relink did not rerun modfinal's BTF step"; }
[ "$(calls)" = 1 ] || fail "tool called $(calls) times, expected 1"
[ -f "$stamp" ] || fail "no stamp $stamp in the module's folder"
[ -z "$(find "$(readlink -f "$O")" "$S" "$(dirname "$mf")" -name '.zero-weak-mcount.ko.stamp')" ] || fail "a stamp was written into the headers tree"
sed -n '1{/^tool .*\/tools\/zero-weak-mcount\/zero-weak-mcount$/p};2{/^flags --kconfig .*\/include\/config\/auto.conf --section __mcount_loc$/p}' "$stamp" >"$W/stamp.head"
[ "$(wc -l <"$W/stamp.head")" = 2 ] && [ "$(sed -n 3p "$stamp")" = "$("$ZWM_TOOL" --version)" ] && [ "$(wc -l <"$stamp")" = 3 ] ||
	{ show "$stamp" "stamp "; fail "the stamp does not hold the tool (the copy in tools/), the flags and the version"; }
if [ "$rel" = 7.2 ]; then
	grep -q "^savedcmd_zwm_test.ko := ld -r .* zwm_test.mod.o .module-common.o\$" "$m/.zwm_test.ko.cmd" ||
		{ show "$m/.zwm_test.ko.cmd"; fail "7.2: the saved link command is not the plain ld -r (the hook must not change it)"; }
fi
ok "$rel hooked build: '  LD [M]', the BTF step ($btf), '  ZWM [M] $kname'; the stamp (module folder, none in the headers) holds: $(head -n1 "$stamp"); tool called once: $(cat "$W/calls.log")"
expect_processed "$ko" "$rel hooked build"
"$ZWM_TOOL" --kconfig "$O/include/config/auto.conf" --section __mcount_loc -o "$W/by-hand.ko" "$W/control.ko" 2>"$W/by-hand.err" ||
	{ show "$W/by-hand.err"; fail "running the tool by hand on the control module failed"; }
cmp -s "$W/by-hand.ko" "$ko" || fail "the hooked build differs from running the tool by hand on the control module"
ok "$rel hooked .ko is byte-identical to 'zero-weak-mcount --kconfig auto.conf --section __mcount_loc -o OUT control.ko'"

# 3. nothing changed: nothing runs, the .ko and the stamp keep bytes and mtime
s1=$(sha "$ko") m1=$(mtime "$ko") t1=$(mtime "$stamp")
sleep 1.1
kb same || { show "$W/same.err"; fail "second build failed"; }
idle same && [ "$(sha "$ko")" = "$s1" ] && [ "$(mtime "$ko")" = "$m1" ] && [ "$(mtime "$stamp")" = "$t1" ] ||
	{ show "$W/same.out"; show "$W/same.err"; fail "a build with no change did something"; }
ok "$rel no change: no LD/BTF/ZWM line, tool not called, nothing of ours on stderr; .ko and stamp keep sha256 and mtime"

# 4. a newer input relinks and reprocesses, to the same bytes
touch_later "$input"
kb touched || { show "$W/touched.err"; fail "build after touch failed"; }
relinked touched && btf_ok touched && [ "$(calls)" = 1 ] || { show "$W/touched.out"; fail "touching $(basename "$input") did not relink, rerun BTF and reprocess"; }
cmp -s "$ko" "$W/by-hand.ko" || fail "the relinked and reprocessed .ko differs from the first result"
ok "$rel touch $(basename "$input"): LD [M], ZWM [M]; tool called once; same bytes as before"

# 5. V=1 shows the command, as for every Kbuild step, and adds no -v:
# Kbuild's V=1 only echoes commands
touch_later "$input"
kb v1 V=1 || { show "$W/v1.err"; fail "V=1 build failed"; }
grep -E 'zero-weak-mcount(/zero-weak-mcount)? --kconfig [^ ]*/include/config/auto.conf --section __mcount_loc '"$kname"'$' "$W/v1.out" >"$W/v1.cmd" ||
	{ show "$W/v1.out"; fail "V=1 did not print the tool command (without -v)"; }
show "$W/v1.cmd" "V=1 stdout: "
[ "$rel" != 7.2 ] || grep -qxF "# ZWM [M] $kname" "$W/v1.out" || { show "$W/v1.out"; fail "7.2 V=1: no '# ZWM [M]' label"; }
[ -z "$(own_stderr "$W/v1.err")" ] || { show "$W/v1.err"; fail "V=1 made the tool report (-v)"; }
kb v1again V=1 || fail "second V=1 build failed"
idle v1again || { show "$W/v1again.out"; fail "V=1 alone (no change) relinked or ran the tool"; }
ok "$rel V=1 prints the command on stdout, without -v; the tool says nothing; V=1 without a change runs nothing"

# 6. make -s: nothing on stdout, nothing of ours on stderr
touch_later "$input"
kb silent -s || { show "$W/silent.err"; fail "make -s failed"; }
[ "$(calls)" = 1 ] || fail "make -s: tool calls: $(calls), expected 1"
[ ! -s "$W/silent.out" ] && [ -z "$(own_stderr "$W/silent.err")" ] || { show "$W/silent.out"; show "$W/silent.err"; fail "make -s printed something"; }
if [ "$rel" != 6.1 ]; then
	# the module comes from 6.1, so the tool rightly warns that the config
	# is another release's: that line must be there
	grep -q -e "$relwarn" "$W/silent.err" || { show "$W/silent.err"; fail "make -s: no warning that the $rel config is not the 6.1 module's"; }
fi
expect_processed "$ko" "$rel make -s build"
ok "$rel make -s with a relink: stdout empty; stderr $(wc -l <"$W/silent.err") line(s): $([ "$rel" = 6.1 ] && echo "Debian's own BTF notice" || echo "the release warning, nothing else of ours")"

# 7. a flag change relinks, reruns BTF and reprocesses; so does changing it back
kb flags ZERO_WEAK_MCOUNT_FLAGS=--signed=refuse || { show "$W/flags.err"; fail "build with extra flags failed"; }
relinked flags && btf_ok flags || { show "$W/flags.out"; fail "a flag change did not relink, rerun BTF and reprocess"; }
grep -q -- '--signed=refuse' "$stamp" || fail "flags not recorded in $stamp"
kb flags-back || fail "build after removing the flag failed"
relinked flags-back || fail "removing the flag did not reprocess"
expect_processed "$ko" "$rel after flag changes"
ok "$rel ZERO_WEAK_MCOUNT_FLAGS=--signed=refuse relinks, reruns the BTF step and reprocesses (recorded in the stamp); dropping it again does too"

# 8. a new tool version relinks and reprocesses (the --version line is recorded)
ZWM_FAKE_VERSION=99.0.0 kb upgrade || { show "$W/upgrade.err"; fail "build with the 'upgraded' tool failed"; }
relinked upgrade && btf_ok upgrade && [ "$(calls)" = 1 ] || { show "$W/upgrade.out"; fail "a new tool version did not relink, rerun BTF and reprocess"; }
grep -qxF 'zero-weak-mcount 99.0.0' "$stamp" || fail "the version is not recorded in $stamp"
kb downgrade || fail "build after the 'upgrade' failed"
relinked downgrade || fail "going back to the old version did not reprocess"
ok "$rel a tool reporting a new --version (same path) relinks, reruns the BTF step and reprocesses; the version line is in the stamp"

# 9. a distribution's version text, with shell syntax in it (with BTF on,
# where it is off: the upgrade must rerun the BTF step)
v='1.2 (Debian 1.2-1) $(shell touch '"$W"'/pwned) `touch '"$W"'/pwned2`; false'
[ "$btf" != off ] || export BTF=y
ZWM_FAKE_VERSION=$v kb parens || { show "$W/parens.err"; fail "a --version with parentheses broke the build"; }
relinked parens && btf_ok parens || { show "$W/parens.out"; show "$W/parens.err"; fail "the version with parentheses did not relink, rerun BTF and reprocess"; }
grep -qxF "zero-weak-mcount $v" "$stamp" || fail "the stamp does not hold the version verbatim"
[ ! -e "$W/pwned" ] && [ ! -e "$W/pwned2" ] || fail "the version text ran as make or shell code"
expect_processed "$ko" "$rel after a --version with parentheses"
ZWM_FAKE_VERSION=$v kb parens-same || fail "second build with that version failed"
idle parens-same || fail "the same version again relinked"
ok "$rel --version '$v': builds, relinks, reruns BTF$([ "$btf" = notice ] || echo " (.BTF $(btf_size) bytes)") and reprocesses; kept verbatim in the stamp, never run; the same again does nothing"
unset BTF
kb parens-back || fail "build after the version with parentheses failed"

if [ "$rel" = 6.1 ]; then
	# 10. CONFIG_WERROR gives --fatal-warnings (command line overrides
	# auto.conf; elsewhere the release warning would be fatal)
	kb werror V=1 CONFIG_WERROR=y || { show "$W/werror.err"; fail "CONFIG_WERROR=y build failed"; }
	grep -q -- 'zero-weak-mcount --kconfig .* --section __mcount_loc --fatal-warnings '"$ko" "$W/werror.out" ||
		{ show "$W/werror.out"; fail "CONFIG_WERROR=y did not add --fatal-warnings"; }
	kb werror-back || fail "build after CONFIG_WERROR failed"
	ok "CONFIG_WERROR=y adds --fatal-warnings and relinks; V=1 line: $(grep -m1 -o 'zero-weak-mcount --kconfig.*' "$W/werror.out")"
else
	# 10. the callsite section follows include/linux/ftrace.h: a stub tool
	# logs its arguments when KBUILD_CPPFLAGS (arm64, riscv, loongarch,
	# powerpc) or KBUILD_CFLAGS (parisc) carries -DCC_USING_PATCHABLE_FUNCTION_ENTRY
	kb pfe1 ZERO_WEAK_MCOUNT="$W/zwm-args" KBUILD_CPPFLAGS="-D__KERNEL__ -DCC_USING_PATCHABLE_FUNCTION_ENTRY" || fail "PFE run (CPPFLAGS) failed"
	touch_later "$input" # same recorded command as pfe1: only a newer input reruns it
	kb pfe2 ZERO_WEAK_MCOUNT="$W/zwm-args" KBUILD_CFLAGS="-O2 -DCC_USING_PATCHABLE_FUNCTION_ENTRY" || fail "PFE run (CFLAGS) failed"
	kb pfe3 ZERO_WEAK_MCOUNT="$W/zwm-args" || fail "non-PFE run failed"
	[ "$(grep -c -- '--section __patchable_function_entries' "$W/args.log")" = 2 ] &&
		[ "$(sed -n 3p "$W/args.log" | grep -c -- '--section __mcount_loc')" = 1 ] ||
		{ show "$W/args.log"; fail "--section is not derived from -DCC_USING_PATCHABLE_FUNCTION_ENTRY"; }
	show "$W/args.log" "tool args: "
	ok "$rel --section __patchable_function_entries with -DCC_USING_PATCHABLE_FUNCTION_ENTRY in KBUILD_CPPFLAGS or KBUILD_CFLAGS, else __mcount_loc"
	kb pfe-back || fail "run after the PFE tests failed"
	expect_processed "$ko" "$rel after the section tests"
fi

# 11. a configured but missing tool fails the build, and keeps failing
s_ok=$(sha "$ko")
rc=0; kb missing ZERO_WEAK_MCOUNT=/nonexistent/zero-weak-mcount || rc=$?
[ "$rc" != 0 ] || fail "a missing tool did not fail the build"
grep -q "error: zero-weak-mcount: '/nonexistent/zero-weak-mcount' was not found or did not run" "$W/missing.err" ||
	{ show "$W/missing.err"; fail "no clear error for the missing tool"; }
show "$W/missing.err" "stderr: "
! grep -q 'LD \[M\]' "$W/missing.out" || fail "a missing tool still relinked the module"
[ "$(sha "$ko")" = "$s_ok" ] || fail "the failed build changed the processed .ko"
rc2=0; kb missing2 ZERO_WEAK_MCOUNT=/nonexistent/zero-weak-mcount || rc2=$?
[ "$rc2" != 0 ] || fail "the second build with the missing tool succeeded"
ok "$rel ZERO_WEAK_MCOUNT=/nonexistent/...: make exits $rc with the error above before linking (the processed .ko is left as it was), a rerun fails again"

# 12. a tool that fails fails the build, and the .ko goes (.DELETE_ON_ERROR)
rc=0; kb failing ZERO_WEAK_MCOUNT="$W/zwm-failing" || rc=$?
[ "$rc" != 0 ] || fail "a failing tool did not fail the build"
grep -q 'simulated failure' "$W/failing.err" || fail "the tool's error did not reach stderr"
[ ! -e "$ko" ] || fail "the .ko was left behind after the tool failed"
ok "$rel a tool that exits 1 fails the build (make exit $rc) and the .ko is deleted"
kb recover || { show "$W/recover.err"; fail "build after the failures failed"; }
expect_processed "$ko" "$rel rebuild after the failures"
ok "$rel with the tool back, the next make relinks and processes the module"

# 13. switching the step off is a change too: the module is relinked once,
# unprocessed, so none is left processed by a tool no longer asked for;
# switching it on again processes it
kb off ZERO_WEAK_MCOUNT= || { show "$W/off.err"; fail "build with the step off failed"; }
grep -qxF "  LD [M]  $kname" "$W/off.out" && ! grep -q 'ZWM \[M\]' "$W/off.out" && [ "$(calls)" = 0 ] ||
	{ show "$W/off.out"; fail "switching the step off did not relink without the tool"; }
grep -qx 'off (ZERO_WEAK_MCOUNT is empty): modules are not processed' "$stamp" || fail "the stamp does not say the step is off"
expect_unprocessed "$ko" "$rel step switched off"
kb on || { show "$W/on.err"; fail "build with the step back on failed"; }
relinked on || fail "switching the step on again did not reprocess"
expect_processed "$ko" "$rel step switched on again"
ok "$rel ZERO_WEAK_MCOUNT= after a hooked build relinks the module once, unprocessed (the stamp says 'off'); on again, it is processed"

# 14. the negative control: the snippet that recorded the version in the
# link command (8f72ccd): an upgrade relinks through the changed command
# line, which modfinal's BTF step ignores, and the version text reaches the
# shell
if [ "$control" = 1 ]; then
	old=$W/old-snippet
	git -C "$ZWM_REPO" show 8f72ccd:Makefile.snippet >"$old" 2>"$W/git.err" ||
		{ show "$W/git.err"; fail "no Makefile.snippet at 8f72ccd (the control needs the checkout's history)"; }
	"$hook" -q --uninstall "$O" && "$hook" -q --snippet "$old" --tool "$W/zwm" "$O" || fail "installing the old snippet failed"
	kb old-on || { show "$W/old-on.err"; fail "build with the old snippet failed"; }
	ZWM_FAKE_VERSION=99.0.0 kb old-upgrade || { show "$W/old-upgrade.err"; fail "old snippet: build after the upgrade failed"; }
	relinked old-upgrade || fail "old snippet: the upgrade did not relink"
	! btf_ran old-upgrade || fail "old snippet: the BTF step ran after the upgrade: the control does not show the defect"
	[ "$btf" != step ] || [ "$(btf_size)" = 0 ] || fail "old snippet: the module kept .BTF: the control does not show the defect"
	rc=0; ZWM_FAKE_VERSION='1.2 (Debian 1.2-1)' kb old-parens || rc=$?
	[ "$rc" != 0 ] && grep -q 'Syntax error: "(" unexpected' "$W/old-parens.err" ||
		{ show "$W/old-parens.err"; fail "old snippet: a --version with parentheses did not break the link"; }
	ok "$rel control (8f72ccd's snippet): an upgrade relinks without the BTF step$([ "$btf" = step ] && echo " (the module has no .BTF)"); '1.2 (Debian 1.2-1)' fails the link: $(grep -m1 -o 'Syntax error.*' "$W/old-parens.err")"
	# back to the current snippet, its stamp older than the module: only the
	# link command changed, so modfinal skips BTF and the hook runs it
	"$hook" -q --uninstall "$O" && "$hook" -q --tool "$W/zwm" "$O" || fail "re-installing the current snippet failed"
	kb restored || { show "$W/restored.err"; fail "build with the current snippet restored failed"; }
	relinked restored && btf_ok restored || { show "$W/restored.out"; fail "a relink for the link command alone left the module without the BTF step"; }
	expect_processed "$ko" "$rel current snippet back"
	ok "$rel back to the current snippet (a relink for the old hook's link command alone): the hook runs the BTF step itself, then the tool"
fi

finish
