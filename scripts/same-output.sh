#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Does this tree's tool say and write exactly what an older commit's did?
# Issue 28's acceptance "output bytes unchanged": byte-identical output
# modules, -v lines (stderr), --format=json lines (stdout) and exit
# statuses on the bundled module and on Debian's real kvm.ko (amd64,
# ppc64el), and the same -v --check and json output over sid's installed
# amd64 and arm64 module trees (arm64 builds KVM in: no kvm.ko there).
#
#   scripts/same-output.sh [OLD_BIN [NEW_BIN]]
#
# OLD_BIN defaults to a release build of $ZWM_SAME_AS (9ddd1e7) in a
# worktree under $ZWM_CACHE; NEW_BIN to this tree's release build. The
# Debian modules come from the shared cache (scripts/fetch-debian-kernel.sh).
# Exit 0 when every case matches, 1 naming each case that does not.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
rev=${ZWM_SAME_AS:-9ddd1e7}
cache=${ZWM_CACHE:-/work/cache/src}
debian=${ZWM_DEBIAN_CACHE:-$HOME/.cache/zero-weak-mcount/debian}

build() { # worktree target-dir
	(cd "$1" && CARGO_TARGET_DIR=$2 nice cargo build --release -q) >&2
	echo "$2/release/zero-weak-mcount"
}
if [ $# -ge 1 ]; then
	old=$1
else
	[ -d "$cache/old-$rev" ] || git -C "$top" worktree add -q --detach "$cache/old-$rev" "$rev" >&2
	old=$(build "$cache/old-$rev" "$cache/old-$rev-target")
fi
new=${2:-$(build "$top" "${CARGO_TARGET_DIR:-$top/target}")}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0

# run NAME ARGS...: each binary in its own directory, on the same relative
# names, so that the paths it prints are the same.
run() {
	local name=$1 side bin
	shift
	for side in old new; do
		bin=$old
		[ $side = new ] && bin=$new
		mkdir -p "$work/$side/$name"
		(cd "$work/$side" && "$bin" "$@" >"$name/stdout" 2>"$name/stderr"; echo $? >"$name/status") || true
	done
	if diff -r "$work/old/$name" "$work/new/$name" >"$work/$name.diff"; then
		printf 'same %-28s status %s, %s json lines, %s stderr lines\n' "$name" "$(cat "$work/new/$name/status")" \
			"$(wc -l <"$work/new/$name/stdout")" "$(wc -l <"$work/new/$name/stderr")"
	else
		echo "DIFFERS $name:"
		head -20 "$work/$name.diff"
		failed=1
	fi
}

# module NAME FILE: the module copied in (xz decompressed) for both sides,
# then written to NAME/out.ko and reported in both formats.
module() {
	local name=$1 file=$2 side
	for side in old new; do
		mkdir -p "$work/$side/$name"
		case $file in
		*.xz) xz -dc "$file" >"$work/$side/$name.ko" ;;
		*) cp "$file" "$work/$side/$name.ko" ;;
		esac
	done
	run "$name" -v --signed=strip -o "$name/out.ko" "$name.ko"
	run "$name-check" -v --check "$name.ko"
	run "$name-json" -v --check --format=json "$name.ko"
}

# tree NAME DIR: a module tree read in place (never written).
tree() {
	run "$1" --check "$2"
	run "$1-v" -v --check "$2"
	run "$1-json" --check --format=json "$2"
}

module bundled "$top/testdata/zwm_test.ko"
module kvm-amd64 "$debian/sid-amd64/7.2.13+deb14-amd64/root/usr/lib/modules/7.2.13+deb14-amd64/kernel/arch/x86/kvm/kvm.ko.xz"
module kvm-ppc64el "$debian/sid-ppc64el/7.2.13+deb14-powerpc64le/root/usr/lib/modules/7.2.13+deb14-powerpc64le/kernel/arch/powerpc/kvm/kvm.ko.xz"
tree sid-amd64 "$debian/sid-amd64/7.2.13+deb14-amd64/root/usr/lib/modules/7.2.13+deb14-amd64"
tree sid-arm64 "$debian/sid-arm64/7.2.13+deb14-arm64/root/usr/lib/modules/7.2.13+deb14-arm64"
echo "sid-amd64 summary: $(tail -1 "$work/new/sid-amd64/stderr") (exit $(cat "$work/new/sid-amd64/status"))"

if [ $failed = 0 ]; then
	echo "same-output: $new matches $old ($rev)"
else
	echo "same-output: FAIL: $new differs from $old ($rev)"
fi
exit $failed
