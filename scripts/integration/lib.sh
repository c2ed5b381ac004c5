# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
# The helpers of the integration suites alone (sourced, bash): evidence
# (show, finish), the module checks and the headers copy.  What every
# script shares (log, ok, fail, the build lock, package installation) is
# scripts/lib.sh's.
#
# Environment set by scripts/integration-test.sh (each test script can also be
# run on its own with these set):
#   ZWM_REPO   the checkout
#   ZWM_TOOL   absolute path of the real zero-weak-mcount binary, as the
#              .deb installed it under ZWM_ROOT
#   ZWM_ROOT   scratch root the tool's .deb is installed in (dpkg --root)
#   ZWM_RPM_ROOT  scratch root the tool's .rpm is installed in (rpm --root)
#   ZWM_DEB    the tool's .deb
#   ZWM_KVER   kernel release of the Debian headers, e.g. 6.1.0-57-amd64
#   ZWM_WORK   scratch folder of this run
#   ZWM_HDR    the arch headers tree of a private copy of the Debian headers
#              (ZWM_WORK/root/usr/src/linux-headers-KVER), see make_headers_copy
#   ZWM_BUILD_LOCK  optional: the one build lock (scripts/lib.sh's
#              locked); kbuild.sh runs its module builds under it

set -euo pipefail

: "${ZWM_REPO:?}" "${ZWM_TOOL:?}" "${ZWM_KVER:?}" "${ZWM_WORK:?}" "${ZWM_ROOT:?}" "${ZWM_RPM_ROOT:?}"

suite=${suite:-$(basename "$0" .sh)}
# log, die, ok ("SUITE: ok N - ..."), fail (the test stops here, loudly) and
# the one build lock (locked) come from scripts/lib.sh.
# shellcheck disable=SC2034 # PROG and REPO are scripts/lib.sh's
PROG=$suite REPO=$ZWM_REPO
. "$ZWM_REPO/scripts/lib.sh"
# show FILE [PREFIX]: indent a log file into our stderr (evidence)
show() {
	sed "s/^/$suite:   ${2:-| }/" "$1" >&2
}
finish() {
	log "all $N_OK assertions passed"
}

need_cmd() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || fail "required command '$c' is missing (scripts/integration-test.sh installs it)"
	done
}

sha() { sha256sum "$1" | cut -d' ' -f1; }
mtime() { stat -c %Y.%y "$1"; }

# mcount_counts KO: prints "RELOCS WORDS" for __mcount_loc of an ELF .ko:
# the number of entries in .rela__mcount_loc and sh_size/8 of __mcount_loc.
mcount_counts() {
	local ko=$1 size relocs
	# (no early exit in awk: under pipefail a SIGPIPE'd readelf would fail)
	size=$(readelf -S -W "$ko" | awk '!done && $0 ~ / __mcount_loc / {
		for (i = 1; i <= NF; i++) if ($i == "__mcount_loc") { print $(i + 4); done = 1 } }')
	[ -n "$size" ] || fail "$ko: no __mcount_loc section (readelf -S)"
	relocs=$(readelf -r -W "$ko" | sed -n "s/^Relocation section '\.rela__mcount_loc' at offset [^ ]* contains \([0-9]*\) entr.*/\1/p")
	[ -n "$relocs" ] || relocs=0
	echo "$relocs $((16#$size / 8))"
}

# elf_copy FILE OUT: OUT = the bare ELF image of a module file as a packager
# or the kernel sees it: decompressed (.ko.xz/.gz/.zst) and with an appended
# module signature cut off.  Prints a description (compression, signature).
elf_copy() {
	local f=$1 out=$2 what="" len siglen elflen info
	case "$f" in
	*.ko.xz)
		xz -dc -- "$f" >"$out"
		info=$(xz -lvv -- "$f")
		what="xz-compressed (check: $(sed -n '/^ *Check:/{s/^ *Check: *//p;q}' <<<"$info"))"
		;;
	*.ko.gz) gzip -dc -- "$f" >"$out"; what="gzip-compressed" ;;
	*.ko.zst) zstd -q -dc -- "$f" >"$out"; what="zstd-compressed" ;;
	*.ko) cp -- "$f" "$out"; what="plain" ;;
	*) fail "$f: not a module file name" ;;
	esac
	len=$(stat -c %s "$out")
	if [ "$len" -gt 40 ] && tail -c 28 "$out" | cmp -s - <(printf '~Module signature appended~\n'); then
		# [ELF][PKCS#7 sig_len][struct module_signature 12 B][marker 28 B]
		siglen=$(od -An -tu1 -j $((len - 32)) -N 4 "$out" | awk '{ print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4 }')
		elflen=$((len - 28 - 12 - siglen))
		[ "$elflen" -gt 0 ] || fail "$f: bad signature trailer (sig_len $siglen)"
		# keep the signature pieces for signature checks
		dd if="$out" of="$out.p7s" bs=1 skip="$elflen" count="$siglen" status=none
		truncate -s "$elflen" "$out"
		what="$what, signed (PKCS#7 $siglen bytes; ELF image $elflen of $len bytes)"
	else
		what="$what, unsigned"
	fi
	echo "$what"
}

# expect_processed FILE [LABEL]: the module (any of .ko/.ko.xz/.ko.gz/.ko.zst,
# signed or not) has been through zero-weak-mcount:
#   - `zero-weak-mcount --check` on its ELF image exits 0 (nothing left to do)
#   - .rela__mcount_loc has fewer entries than __mcount_loc has words
expect_processed() {
	local f=$1 label=${2:-$1} tmp what counts rc=0
	[ -f "$f" ] || fail "$label: $f does not exist"
	tmp=$(mktemp "$ZWM_WORK/elf.XXXXXX.ko")
	what=$(elf_copy "$f" "$tmp")
	counts=$(mcount_counts "$tmp")
	# shellcheck disable=SC2086 # the two counts, split on purpose
	set -- $counts
	"$ZWM_TOOL" --check "$tmp" 2>"$tmp.check" || rc=$?
	if [ "$rc" != 0 ]; then
		show "$tmp.check"
		fail "$label: NOT processed: 'zero-weak-mcount --check' exits $rc ($what; .rela__mcount_loc $1 of $2 words)"
	fi
	[ "$1" -lt "$2" ] || fail "$label: NOT processed: .rela__mcount_loc has $1 entries for $2 __mcount_loc words ($what)"
	ok "$label is processed: $what; --check exits 0; .rela__mcount_loc $1 entries for $2 __mcount_loc words"
	rm -f "$tmp" "$tmp.check"
}

# expect_unprocessed FILE [LABEL]: the control: --check exits 1 and every
# __mcount_loc word still has its relocation.
expect_unprocessed() {
	local f=$1 label=${2:-$1} tmp what counts rc=0
	tmp=$(mktemp "$ZWM_WORK/elf.XXXXXX.ko")
	what=$(elf_copy "$f" "$tmp")
	counts=$(mcount_counts "$tmp")
	# shellcheck disable=SC2086 # the two counts, split on purpose
	set -- $counts
	"$ZWM_TOOL" --check "$tmp" 2>/dev/null || rc=$?
	[ "$rc" = 1 ] || fail "$label: expected an unprocessed module ('--check' exit 1), got exit $rc"
	[ "$1" = "$2" ] || fail "$label: expected all $2 __mcount_loc words relocated, found $1"
	ok "$label is unprocessed (control): $what; --check exits 1; .rela__mcount_loc $1 entries for $2 words"
	rm -f "$tmp"
}

# make_headers_copy DEST [FROM [KVER]]: copy Debian's headers for KVER
# (default ZWM_KVER) as installed under FROM (default /; or an unpacked
# package root): the arch tree, the -common tree and linux-kbuild-X.Y, the
# three pieces the symlinks tie together, under DEST with the same relative
# layout, so the hook can be installed without touching the host's /usr/src
# or /usr/lib.  Prints the copy's arch tree.
make_headers_copy() {
	local dest=$1 from=${2:-} kver=${3:-$ZWM_KVER} arch common kbuild l t
	arch=/usr/src/linux-headers-$kver
	[ -f "$from$arch/Makefile" ] || fail "$from$arch/Makefile missing (linux-headers-$kver not installed)"
	common=$(sed -n 's|^include \(/.*\)/Makefile$|\1|p' "$from$arch/Makefile")
	kbuild=$(readlink -f "$from$arch/scripts")
	kbuild=${kbuild%/scripts}
	[ -d "$kbuild/scripts" ] || fail "$from$arch/scripts does not resolve to a linux-kbuild tree"
	kbuild=${kbuild#"$from"}
	mkdir -p "$dest/usr/src" "$dest$(dirname "$kbuild")"
	cp -a -- "$from$arch" "$dest/usr/src/"
	if [ -n "$common" ]; then
		[ -d "$from$common" ] || fail "$arch/Makefile includes $common/Makefile, which is missing"
		cp -a -- "$from$common" "$dest/usr/src/"
		# the arch tree's Makefile includes the -common one by absolute path
		sed -i "s|^include $common/Makefile\$|include $dest$common/Makefile|" "$dest$arch/Makefile"
	fi
	# 7.2 also sets KBUILD_OUTPUT=<arch tree> there
	sed -i "s|^KBUILD_OUTPUT=$arch\$|KBUILD_OUTPUT=$dest$arch|" "$dest$arch/Makefile"
	cp -a -- "$from$kbuild" "$dest$(dirname "$kbuild")/"
	# every symlink of the copy must stay inside the copy
	while IFS= read -r l; do
		t=$(readlink -f -- "$l")
		case "$t" in "$dest"/*) ;; *) fail "headers copy: $l points outside the copy ($t)" ;; esac
	done < <(find "$dest" -type l)
	echo "$dest$arch"
}

# touch, after the clock has moved on: file times come from a coarse clock
# (one jiffy, up to 10 ms), so a touch right after a build can give a source
# the same mtime as the target it must be newer than, and make does nothing.
touch_later() {
	sleep 0.05
	touch "$@"
}
