#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The headers hook versus dpkg: install-kbuild-hook (as the tool's .deb
# installed it) on a Makefile.modfinal that a dpkg package owns, in a
# scratch root with its own dpkg database (dpkg --root), by --root/--kver as
# in a chroot.  The root holds linux-kbuild-X.Y installed with dpkg from the
# same .deb as the host's, and a copy of the host's linux-headers-KVER with
# Debian's absolute /lib/modules/KVER/build link.
#   1. the installer diverts the package's file (dpkg-divert --rename) and
#      `dpkg --verify` stays clean; without the diversion it would not;
#   2. reinstalling the linux-kbuild .deb (the stand-in for an upgrade)
#      keeps the hook, and dpkg writes the package's file to the diverted
#      name;
#   3. an upgrade that changes the file is reported by --status, and a
#      rerun rebuilds the hook from the new file;
# (Unhooking with dpkg-divert: tests/scripts.rs and make dkms-abi.)
#
# Needs: ZWM_REPO ZWM_TOOL ZWM_KVER ZWM_WORK ZWM_ROOT (see scripts/lib.sh).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
suite_init divert
need_cmd dpkg dpkg-divert dpkg-query apt-get

hook=$ZWM_ROOT/usr/sbin/install-kbuild-hook
[ -x "$hook" ] || fail "the tool's .deb did not install $hook"
mkdir -p "$W/debs"

# --- the package that owns the host's Makefile.modfinal, and its .deb ------------
hostmf=$(readlink -f "/usr/src/linux-headers-$ZWM_KVER/scripts/Makefile.modfinal")
pkg=$(dpkg-query -S "$hostmf" 2>/dev/null | sed -n "s|^\([^:]*\)\(:[a-z0-9]*\)\{0,1\}: $hostmf\$|\1|p" | head -n 1)
[ -n "$pkg" ] || fail "no dpkg package owns $hostmf"
ver=$(dpkg-query -W -f='${Version}' "$pkg")
(cd "$W/debs" && apt-get download "$pkg=$ver") >"$W/download.log" 2>&1 ||
	{ show "$W/download.log"; fail "apt-get download $pkg=$ver failed"; }
deb=$(find "$W/debs" -name "${pkg}_*.deb" -print -quit)
[ -n "$deb" ] || fail "no $pkg .deb downloaded"

# --- the scratch root ---------------------------------------------------------------
R=$W/root
mkdir -p "$R/var/lib/dpkg/info" "$R/var/lib/dpkg/updates" "$R/var/log" "$R/usr/src" "$R/lib/modules/$ZWM_KVER"
touch "$R/var/lib/dpkg/status" "$R/var/lib/dpkg/available"
ddpkg() { dpkg --root="$R" --force-depends "$@"; }
ddpkg -i "$deb" >"$W/install1.log" 2>&1 || { show "$W/install1.log"; fail "dpkg --root -i $(basename "$deb") failed"; }
cp -a "/usr/src/linux-headers-$ZWM_KVER" "$R/usr/src/"
common=$(sed -n 's|^include \(/.*\)/Makefile$|\1|p' "/usr/src/linux-headers-$ZWM_KVER/Makefile")
[ -z "$common" ] || cp -a "$common" "$R/usr/src/"
ln -s "/usr/src/linux-headers-$ZWM_KVER" "$R/lib/modules/$ZWM_KVER/build"
mf=$R$hostmf
[ -f "$mf" ] || fail "$pkg did not install $hostmf in the root"
orig=$(sha "$mf")
cp -- "$mf" "$W/Makefile.modfinal.orig"
verify() { dpkg --root="$R" --verify "$pkg" >"$W/verify.out" 2>&1 && [ ! -s "$W/verify.out" ]; }
verify || { show "$W/verify.out"; fail "dpkg --verify $pkg is not clean before anything happened"; }

# the control: an edit dpkg does not know about is flagged
echo '# edited' >>"$mf"
! verify || fail "dpkg --verify did not flag an edited Makefile.modfinal: the checks below would prove nothing"
show "$W/verify.out" "control, dpkg --verify: "
cp -- "$W/Makefile.modfinal.orig" "$mf"
verify || fail "restoring the file did not make dpkg --verify clean"
ok "control: dpkg --verify $pkg flags an edited Makefile.modfinal, and is clean on the package's bytes"

# --- 1. install: diverted, hooked, dpkg --verify clean ---------------------------------
"$hook" --root "$R" --kver "$ZWM_KVER" >"$W/hook1.out" 2>&1 || { show "$W/hook1.out"; fail "install-kbuild-hook --root --kver failed"; }
show "$W/hook1.out"
grep -q "diverted the file of package $pkg" "$W/hook1.out" || fail "the installer did not divert the packaged file"
dpkg-divert --root="$R" --list >"$W/divert.list"
show "$W/divert.list" "dpkg-divert --list: "
[ "$(dpkg-divert --root="$R" --listpackage "$hostmf")" = zero-weak-mcount ] || fail "no diversion of $hostmf by zero-weak-mcount"
[ "$(sha "$mf.zwm-orig")" = "$orig" ] || fail "the diverted copy is not the package's file"
grep -qxF 'include $(srctree)/scripts/Makefile.zero-weak-mcount' "$mf" || fail "$mf is not hooked"
verify || { show "$W/verify.out"; fail "dpkg --verify $pkg is not clean with the hook installed"; }
"$hook" --status --root "$R" --kver "$ZWM_KVER" >/dev/null 2>&1 || fail "--status says not hooked"
ok "hook installed through --root/--kver: $pkg's file diverted to Makefile.modfinal.zwm-orig, dpkg --verify clean"

# --- 2. reinstalling the package (an upgrade to the same version) -----------------------
ddpkg -i "$deb" >"$W/install2.log" 2>&1 || { show "$W/install2.log"; fail "reinstalling $pkg failed"; }
grep -qxF 'include $(srctree)/scripts/Makefile.zero-weak-mcount' "$mf" || fail "reinstalling $pkg dropped the hook"
[ "$(sha "$mf.zwm-orig")" = "$orig" ] || fail "the reinstalled package's file did not go to the diverted name"
verify || { show "$W/verify.out"; fail "dpkg --verify $pkg is not clean after the reinstall"; }
"$hook" --status --root "$R" --kver "$ZWM_KVER" >"$W/status2.out" 2>&1 || { show "$W/status2.out"; fail "--status after the reinstall"; }
ok "dpkg -i $(basename "$deb") again: the hook survives, dpkg wrote the package's file to the diverted name, --verify clean"

# --- 3. an upgrade that changes the file --------------------------------------------------
# The next version's Makefile.modfinal, as dpkg would unpack it: to the
# diverted name.
printf '# a later %s\n' "$pkg" >>"$mf.zwm-orig"
rc=0; "$hook" --status --root "$R" --kver "$ZWM_KVER" >"$W/status3.out" 2>&1 || rc=$?
show "$W/status3.out"
[ "$rc" = 1 ] && grep -q 'outdated' "$W/status3.out" || fail "--status did not report the outdated hook (exit $rc)"
"$hook" --root "$R" --kver "$ZWM_KVER" >"$W/hook3.out" 2>&1 || { show "$W/hook3.out"; fail "rerunning the installer failed"; }
grep -q "hook rebuilt" "$W/hook3.out" || { show "$W/hook3.out"; fail "the rerun did not rebuild the hook"; }
grep -qxF "# a later $pkg" "$mf" && grep -qxF 'include $(srctree)/scripts/Makefile.zero-weak-mcount' "$mf" ||
	fail "the rebuilt hook is not the new file plus the hook lines"
"$hook" --status --root "$R" --kver "$ZWM_KVER" >/dev/null 2>&1 || fail "--status after the rebuild"
ok "a changed package file: --status exits 1 ('outdated'); a rerun rebuilds the hook from it"

finish
