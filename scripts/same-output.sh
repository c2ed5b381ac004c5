#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
# Does this tree's tool say and write exactly what an older commit's did?
# Issue 28's acceptance "output bytes unchanged": byte-identical output
# modules, -v lines (stderr) and exit statuses on the bundled module, on
# Debian sid's real kvm.ko (amd64, ppc64el) and, as arm64 builds KVM in,
# on its rvu_nicpf.ko (the one arm64 module that changes), and the same
# --check output over sid's installed amd64 and arm64 module trees. The
# at-risk lines (after 9ddd1e7) are left out of the comparison.
# 9ddd1e7 has no --format=json: ZWM_SAME_JSON=1 compares that too, for
# two newer builds (a key the old build's JSON lacks, such as
# in_function_before before it came, is left out of the comparison and
# counted); ZWM_SAME_QUICK=1 leaves the trees out.
#
#   scripts/same-output.sh [OLD_BIN [NEW_BIN]]
#
# OLD_BIN defaults to the release build of $ZWM_SAME_AS (9ddd1e7) in the
# detached worktree $ZWM_CACHE/old (default /work/cache/src/old), target
# directory $ZWM_CACHE/old-target: built there once (the worktree made
# when missing), then reused as it is. NEW_BIN defaults to this tree's
# release build. The Debian modules come from the shared cache
# (scripts/fetch-debian-kernel.sh).
# Exit 0 when every case matches and the negative control (each case's
# output altered by one byte) is told apart; 1 naming each case that is not.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
rev=${ZWM_SAME_AS:-9ddd1e7} what=" (${ZWM_SAME_AS:-9ddd1e7})"
cache=${ZWM_CACHE:-/work/cache/src}
debian=${ZWM_DEBIAN_CACHE:-$HOME/.cache/zero-weak-mcount/debian}

build() { # worktree target-dir
	(cd "$1" && CARGO_TARGET_DIR=$2 nice cargo build --release -q) >&2
	echo "$2/release/zero-weak-mcount"
}
if [ $# -ge 1 ]; then
	old=$1 what=""
else
	[ -d "$cache/old" ] || git -C "$top" worktree add -q --detach "$cache/old" "$rev" >&2
	want=$(git -C "$top" rev-parse "$rev^{commit}")
	if [ "$(git -C "$cache/old" rev-parse HEAD)" != "$want" ]; then
		echo "same-output: $cache/old is not a checkout of $rev ($want); give OLD_BIN" >&2
		exit 2
	fi
	old=$cache/old-target/release/zero-weak-mcount
	[ -x "$old" ] || old=$(build "$cache/old" "$cache/old-target")
fi
new=${2:-$(build "$top" "${CARGO_TARGET_DIR:-$top/target}")}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0 unkeyed=0

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
		# The at-risk lines (-v's and --check's, with its next step) came after 9ddd1e7: compared apart.
		grep -e ' at risk: ' -e ': still at risk once processed: ' -e 'no function at risk' -e 'never run; ' "$work/$side/$name/stderr" >"$work/$side/$name.risk" || true
		# and later builds say "(signed)" of a signed module --check reports, and count them in the summary.
		grep -v -e ' at risk: ' -e ': still at risk once processed: ' -e 'no function at risk' -e 'never run; ' "$work/$side/$name/stderr" |
			sed -e 's/: would change (signed): /: would change: /' -e 's/ would change ([0-9]* signed), / would change, /' >"$work/$side/$name/e" || true
		mv "$work/$side/$name/e" "$work/$side/$name/stderr"
	done
	# A JSON key newer than the old build (in_function_before) is left out.
	if ! grep -q '"in_function_before": ' "$work/old/$name/stdout" &&
		grep -q '"in_function_before": ' "$work/new/$name/stdout"; then
		unkeyed=$((unkeyed + $(grep -c '"in_function_before": ' "$work/new/$name/stdout")))
		sed -i -E 's/"in_function_before": (null|[0-9]+), //' "$work/new/$name/stdout"
	fi
	if diff -r "$work/old/$name" "$work/new/$name" >"$work/$name.diff"; then
		printf 'same %-28s status %s, %s stdout lines, %s stderr lines\n' "$name" "$(cat "$work/new/$name/status")" \
			"$(wc -l <"$work/new/$name/stdout")" "$(wc -l <"$work/new/$name/stderr")"
		[ ! -f "$work/new/$name/out.ko" ] || echo "     $name/out.ko: $(sha256sum <"$work/new/$name/out.ko" | cut -c1-16)"
	else
		echo "DIFFERS $name:"
		head -20 "$work/$name.diff"
		failed=1
	fi
}

# module NAME FILE: the module copied in (xz decompressed) for both sides,
# then written to NAME/out.ko, quiet and with -v.
module() {
	local name=$1 file=$2 side
	for side in old new; do
		mkdir -p "$work/$side/$name"
		case $file in
		*.xz) xz -dc "$file" >"$work/$side/$name.ko" ;;
		*) cp "$file" "$work/$side/$name.ko" ;;
		esac
	done
	run "$name" --signed=strip -o "$name/out.ko" "$name.ko"
	run "$name-v" -v --signed=strip -o "$name-v/out.ko" "$name.ko"
	[ -z "${ZWM_SAME_JSON:-}" ] || run "$name-json" -v --check --signed=strip --format=json "$name.ko"
}

# tree NAME DIR: a module tree read in place (never written).
tree() {
	local how=(--check --signed=strip --compressed=recompress)
	run "$1" "${how[@]}" "$2"
	[ -z "${ZWM_SAME_JSON:-}" ] || run "$1-json" --format=json "${how[@]}" "$2"
}

module bundled "$top/testdata/zwm_test.ko"
module kvm-amd64 "$debian/sid-amd64/7.2.13+deb14-amd64/root/usr/lib/modules/7.2.13+deb14-amd64/kernel/arch/x86/kvm/kvm.ko.xz"
module kvm-ppc64el "$debian/sid-ppc64el/7.2.13+deb14-powerpc64le/root/usr/lib/modules/7.2.13+deb14-powerpc64le/kernel/arch/powerpc/kvm/kvm.ko.xz"
module rvu_nicpf-arm64 "$debian/sid-arm64/7.2.13+deb14-arm64/root/usr/lib/modules/7.2.13+deb14-arm64/kernel/drivers/net/ethernet/marvell/octeontx2/nic/rvu_nicpf.ko.xz"
[ -n "${ZWM_SAME_QUICK:-}" ] || tree sid-amd64 "$debian/sid-amd64/7.2.13+deb14-amd64/root/usr/lib/modules/7.2.13+deb14-amd64"
[ -n "${ZWM_SAME_QUICK:-}" ] || tree sid-arm64 "$debian/sid-arm64/7.2.13+deb14-arm64/root/usr/lib/modules/7.2.13+deb14-arm64"
for t in sid-amd64 sid-arm64; do
	[ -n "${ZWM_SAME_QUICK:-}" ] || echo "$t summary: $(tail -1 "$work/new/$t/stderr") (exit $(cat "$work/new/$t/status"))"
done

# Negative control: each case again with one zero byte added to the module
# it wrote, to its stderr and to its stdout (the JSON); the comparison must
# tell every one of them from the old tool's.
cases=0 caught=0
for dir in "$work"/new/*/; do
	name=$(basename "$dir")
	for alter in out.ko stderr stdout; do
		[ -f "$dir/$alter" ] || continue
		rm -rf "$work/neg" && cp -r "$dir" "$work/neg"
		printf '\0' >>"$work/neg/$alter"
		cases=$((cases + 1))
		diff -r "$work/old/$name" "$work/neg" >/dev/null || caught=$((caught + 1))
	done
done
[ "$unkeyed" = 0 ] || echo "left out: in_function_before, which the old build lacks, in $unkeyed JSON lines"
echo "negative control: $caught of $cases altered outputs (one byte more in out.ko, stderr or stdout) differ"
[ "$caught" = "$cases" ] && [ "$cases" -gt 0 ] || failed=1

if [ $failed = 0 ]; then
	echo "same-output: $new matches $old$what"
else
	echo "same-output: FAIL: $new differs from $old$what"
fi
exit $failed
