#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The Debian package built as the archive builds it: for each suite, a
# clean root (mmdebstrap --variant=buildd), the Build-Depends from the
# Debian archive only (apt-get build-dep), then dpkg-buildpackage -us -uc
# (source and binary) in a network namespace with no network at all, so
# nothing can come from crates.io. Then, in the same root: the .deb
# installed with apt, the autopkgtest (autopkgtest's null runner on the
# .dsc and the .deb), and lintian on the .changes, which must show no
# error and no warning. Last, the tool built there and `cargo build
# --release` on this host must write the same bytes for
# testdata/zwm_test.ko and, with --kvm, for Debian sid's kvm.ko.
#
# Usage: scripts/deb-chroot.sh [--suites "trixie sid"] [--kvm] [--out DIR]
#   --suites LIST  the suites to build in (default: trixie sid)
#   --kvm          also compare the output on sid's kvm.ko (fetches the
#                  kernel with scripts/fetch-debian-kernel.sh)
#   --out DIR      where the packages and logs go (default target/deb-chroot)
#
# Needs root; installs mmdebstrap when it is missing. The source is the
# files git knows in this checkout (tracked, or new and not ignored).
set -euo pipefail

PROG="deb-chroot"
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=lib.sh
. "$REPO/scripts/lib.sh"

suites="trixie sid"
kvm=0
out=$REPO/target/deb-chroot
while [ $# -gt 0 ]; do
    case "$1" in
        --suites) [ $# -ge 2 ] || die "--suites needs a list"; suites=$2; shift 2;;
        --kvm) kvm=1; shift;;
        --out) [ $# -ge 2 ] || die "--out needs a folder"; out=$2; shift 2;;
        *) arg_error "$1";;
    esac
done
[ "$(id -u)" = 0 ] || die "needs root (mmdebstrap root mode, mounts, chroot)"
missing_packages "mmdebstrap mmdebstrap" "/usr/share/keyrings/debian-archive-keyring.gpg debian-archive-keyring" \
    "unshare util-linux" "cpio cpio" "jq jq"
install_packages "${MISSING[@]}"

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$REPO/Cargo.toml" | head -n 1)
debversion=$(sed -n '1s/^[^ ]* (\([^)]*\)).*/\1/p' "$REPO/debian/changelog")
arch=$(dpkg --print-architecture)
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/deb-chroot.XXXXXX")
trap 'rm -rf --one-file-system "$work"' EXIT

# Downloaded .debs are kept per suite across runs (apt checks each one
# against the archive's hashes), so a warm run downloads nothing again.
cache=${ZWM_CACHE:-$HOME/.cache/zero-weak-mcount}/deb-chroot

# sstep NAME LOG COMMAND...: lib.sh's step, named after the suite
sstep() { step "$suite: $1" "${@:2}"; }

start=$SECONDS
for suite in $suites; do
    t_suite=$SECONDS
    root=$work/$suite
    res=$out/$suite
    rm -rf "$res"
    mkdir -p "$res"
    opts=()
    # The sid Release file may be past its Valid-Until on this mirror;
    # the signatures are still checked.
    [ "$suite" = trixie ] || opts+=(--aptopt='Acquire::Check-Valid-Until "false"')
    APT_CACHE=$cache/$suite
    sstep "mmdebstrap --variant=buildd $suite" "$res/mmdebstrap.log" debian_root "$APT_CACHE" \
        --variant=buildd "${opts[@]}" --include=lintian,autopkgtest,ca-certificates "$suite" "$root"
    copy_tree "$root/build/zero-weak-mcount-$version"
    sstep "apt-get build-dep" "$res/build-dep.log" in_root "$root" "apt-get update -q && cd /build/zero-weak-mcount-$version && apt-get build-dep -y ./"
    in_root "$root" "rustc --version; cargo --version
        dpkg-query -W -f '\${Package} \${Version}\n' 'librust-*-dev' debhelper dh-cargo lintian | awk 'NF == 2'" \
        >"$res/versions.txt" 2>&1
    log "$suite: $(head -n 1 "$res/versions.txt")"
    NET=none sstep "dpkg-buildpackage -us -uc, no network" "$res/build.log" \
        in_root "$root" "cd /build/zero-weak-mcount-$version && dpkg-buildpackage -us -uc"
    deb=zero-weak-mcount_${debversion}_$arch.deb
    sstep "apt-get install ./$deb" "$res/install.log" in_root "$root" "cd /build && apt-get install -y ./$deb"
    sstep "autopkgtest (null runner)" "$res/autopkgtest.log" \
        in_root "$root" "cd /build && autopkgtest ./$deb ./zero-weak-mcount_$debversion.dsc -- null"
    # Every tag is shown (-I --pedantic); errors and warnings fail.
    sstep "lintian" "$res/lintian.log" in_root "$root" \
        "cd /build && lintian -I --pedantic --fail-on error,warning zero-weak-mcount_${debversion}_$arch.changes"
    grep -E '^[EWIPX]: ' "$res/lintian.log" | sed "s/^/$PROG: $suite: lintian: /" >&2 || true
    # A real clean: after debian/rules clean the tree is the source package
    # (less the .gitignore files, which dpkg-source leaves out by default).
    NET=none sstep "debian/rules clean, then diff -r against the .dsc" "$res/clean.log" in_root "$root" \
        "cd /build/zero-weak-mcount-$version && debian/rules clean && cd /build && rm -rf unpacked &&
        dpkg-source -x zero-weak-mcount_$debversion.dsc unpacked && diff -r -x .gitignore unpacked zero-weak-mcount-$version"
    cp "$root"/build/zero-weak-mcount_"$debversion"* "$res/"
    in_root "$root" "zero-weak-mcount -o /build/zwm_test.out.ko /build/zero-weak-mcount-$version/testdata/zwm_test.ko" \
        >"$res/zwm_test.log" 2>&1 || die "$suite: the installed tool failed on zwm_test.ko"
    cp "$root/build/zwm_test.out.ko" "$res/zwm_test.out.ko"
    if [ "$kvm" = 1 ]; then
        cp "$work/kvm.ko" "$root/build/kvm.ko" 2>/dev/null || {
            kroot=$("$REPO/scripts/fetch-debian-kernel.sh" sid amd64)
            kver=$(cat "$kroot/../kver")
            ko=$(find "$kroot" -path "*/$kver/*" -name 'kvm.ko*' | head -n 1)
            [ -n "$ko" ] || die "no kvm.ko in $kroot"
            case "$ko" in *.xz) xz -dc "$ko" >"$work/kvm.ko";; *.zst) zstd -qdc "$ko" >"$work/kvm.ko";; *) cp "$ko" "$work/kvm.ko";; esac
            log "kvm.ko of sid $kver"
            cp "$work/kvm.ko" "$root/build/kvm.ko"
        }
        in_root "$root" "zero-weak-mcount -v --signed=strip -o /build/kvm.out.ko /build/kvm.ko" \
            >"$res/kvm.log" 2>&1 || die "$suite: the installed tool failed on kvm.ko"
        cp "$root/build/kvm.out.ko" "$res/kvm.out.ko"
    fi
    rm -rf --one-file-system "$root"
    log "$suite: done in $((SECONDS - t_suite)) s"
done

log "this host's build: $(rustc --version)"
tool=$(find_tool)
"$tool" -o "$out/zwm_test.host.ko" "$REPO/testdata/zwm_test.ko" 2>/dev/null
if [ "$kvm" = 1 ]; then
    "$tool" --format=json --signed=strip -o "$out/kvm.host.ko" "$work/kvm.ko" >"$out/kvm.host.json" 2>"$out/kvm.host.log"
    # Not a vacuous comparison: the run zeroed entries, not only the signature.
    [ "$(jq -r '"\(.status) \(.weak > 0)"' "$out/kvm.host.json")" = "changed true" ] ||
        die "the host's run zeroed nothing in kvm.ko: $(report_line "$out/kvm.host.json")"
    log "kvm.ko: $(report_line "$out/kvm.host.json")"
fi
for suite in $suites; do
    cmp "$out/zwm_test.host.ko" "$out/$suite/zwm_test.out.ko" ||
        die "$suite's package and this host's cargo build write different bytes for zwm_test.ko"
    log "$suite: zwm_test.ko: same bytes as this host's build ($(sha256sum <"$out/zwm_test.host.ko" | cut -c1-16))"
    if [ "$kvm" = 1 ]; then
        cmp "$out/kvm.host.ko" "$out/$suite/kvm.out.ko" ||
            die "$suite's package and this host's cargo build write different bytes for kvm.ko"
        log "$suite: kvm.ko: same bytes as this host's build ($(sha256sum <"$out/kvm.host.ko" | cut -c1-16))"
    fi
done
n=$(wc -w <<<"$suites")
log "all $n suites built, installed, tested and lintian-clean in $((SECONDS - start)) s"
echo "deb-chroot: $n passed, 0 failed"
