# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
# scripts/lib.sh: helpers shared by the top-level scripts (sourced, bash).
# (The kernel-series helpers are described at their definitions below.)
#
# Before sourcing, set PROG (the prefix of every message); REPO (the
# checkout) defaults to this file's; DIE_STATUS is die's exit status
# (default 1). The integration suites (scripts/integration/) call
# suite_init; the package and Debian-root helpers are at the end.
#
#   log MSG...              "PROG: MSG" on stderr
#   die MSG...              "PROG: error: MSG" on stderr, then exit
#   ok MSG...               "PROG: ok N - MSG" (TAP-style: N counts N_OK)
#   fail MSG...             "PROG: FAIL: MSG", then exit 1
#   has_line PATTERN CMD... whether CMD's output has a line that is exactly
#                           PATTERN (a fixed string). CMD runs to the end
#                           first: under pipefail, `CMD | grep -q` fails
#                           when grep exits at the first match and CMD gets
#                           SIGPIPE (tests/scripts.rs keeps that shape out)
#   missing_packages "CMD-OR-PATH PACKAGE"...
#                           set MISSING to the packages whose command (or,
#                           for an absolute path, file) is missing
#   install_packages PKG... apt-get install them (as root); on failure run
#                           apt-get update once and retry
#   find_tool [PATH]        print the zero-weak-mcount to use: PATH (made
#                           absolute, must be executable), else
#                           REPO/target/release/zero-weak-mcount brought up
#                           to date with `cargo build --release`. Call it as
#                           TOOL=$(find_tool "$x") || exit 1.

REPO=${REPO:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
# The guest runner (scripts/guest/run.sh and its payloads).
# shellcheck disable=SC2034 # for the scripts that source this file
GUEST=$REPO/scripts/guest

log() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { log "error: $*"; exit "${DIE_STATUS:-1}"; }
N_OK=0
ok() { N_OK=$((N_OK + 1)); log "ok $N_OK - $*"; }
fail() { log "FAIL: $*"; exit 1; }

# arg_error ARG: for --help, print the script's header comment (from line 2
# to `set -`) and exit 0; for any other ARG, die naming it.
arg_error() {
    case "$1" in
        -h|--help) sed -n '2,/^set -/{/^set -/d;s/^# \{0,1\}//;p}' "$0"; exit 0;;
    esac
    die "unknown argument $1 (see --help)"
}

# work_dir DIR TEMPLATE: print DIR made absolute (created), or a new
# mktemp -d folder from TEMPLATE when DIR is empty.
work_dir() {
    if [ -z "$1" ]; then mktemp -d "$2"; else mkdir -p "$1" && (cd "$1" && pwd); fi
}

has_line() {
    local pattern=$1 out
    shift
    out=$("$@" 2>/dev/null) || true
    grep -qxF -- "$pattern" <<<"$out"
}

missing_packages() {
    local n what
    MISSING=()
    for n in "$@"; do
        what=${n% *}
        case "$what" in
            /*) [ -e "$what" ] && continue;;
            *) command -v "$what" >/dev/null 2>&1 && continue;;
        esac
        case " ${MISSING[*]} " in *" ${n#* } "*) ;; *) MISSING+=("${n#* }");; esac
    done
}

install_packages() {
    [ $# -gt 0 ] || return 0
    [ "$(id -u)" = 0 ] || die "missing host packages: $* (install them, or run as root)"
    local apt=(apt-get -o DPkg::Lock::Timeout=600)
    log "installing host packages: $*"
    export DEBIAN_FRONTEND=noninteractive
    "${apt[@]}" install -y -q --no-install-recommends "$@" >&2 && return 0
    log "apt-get install failed; running apt-get update once and retrying"
    "${apt[@]}" update -q >&2 || die "apt-get update failed"
    "${apt[@]}" install -y -q --no-install-recommends "$@" >&2 || die "apt-get install $* failed"
}

# Debian's python3-pyelftools serves Debian's python3 alone: a python3 found
# first on PATH (pyenv's, a virtualenv) may lack it, and guest.py would then
# die in a traceback after the kernel build.  Say so before anything runs.
need_elftools() {
    python3 -c 'import elftools' 2>/dev/null ||
        die "$(command -v python3) cannot import elftools: python3-pyelftools is installed for /usr/bin/python3 (put that python3 first on PATH, or run: pyenv global system)"
}

find_tool() {
    local tool=${1:-}
    if [ -n "$tool" ]; then
        tool=$(readlink -f "$tool")
        [ -x "$tool" ] || die "$1 is not an executable"
    else
        tool=$REPO/target/release/zero-weak-mcount
        if command -v cargo >/dev/null 2>&1; then
            log "cargo build --release"
            (cd "$REPO" && cargo build --release --quiet >&2) || die "cargo build --release failed"
        fi
        [ -x "$tool" ] || die "no tool at $tool (cargo build --release did not make it)"
    fi
    printf '%s\n' "$tool"
}

# --- the kernel series and its source (kernel-e2e, kernel-bench, kernel-selftests) ---
#   now                     seconds since the epoch
#   series_source [REL]     set TARBALL (Debian's linux-source-REL, fetched
#                           with scripts/fetch-debian-kernel.sh from the
#                           suite SOURCES names; REL defaults to 7.2),
#                           TARDIR (the tarball's top folder) and PATCHES
#                           (the NNNN-*.patch files of $ZWM_SERIES, default
#                           kernel/)
#   unpack_tree DIR SERIES  DIR holds TARBALL's tree, with the series applied
#                           when SERIES is 1; unpacked again only when the
#                           tarball or the series changed (tar keeps the
#                           archive's mtimes, so an unchanged tree builds
#                           incrementally)
#   unhooked OBJ REL OUT    write to OUT the module REL of the build tree OBJ
#                           as the build made it before the series' Kbuild
#                           hook ran the tool: relinked from its objects with
#                           the link command Kbuild saved, less the hook's
#                           ": zero-weak-mcount ..." record (a module built
#                           without the tool); a module the hook did not
#                           touch is copied as it is
#   locked CMD...           run CMD holding the lock file $ZWM_BUILD_LOCK
#                           (flock) when that is set, so that on a shared
#                           machine one kernel build runs at a time and no
#                           boot holds the lock; else just run CMD.  The one
#                           build lock of every script (kernel trees and
#                           the integration suites' module builds)
#   install_config NEW OBJ  NEW/.config becomes OBJ/.config unless they are
#                           the same (so its mtime, and the build, stay);
#                           NEW is removed
#   kernel_config SCRIPT SRC OBJ [MAKE-VAR...]
#                           OBJ/.config from the config script SCRIPT of
#                           scripts/kernel-e2e/ (config.sh, ...), under the
#                           lock, through install_config
#   kernel_make LOG MAKE-ARG...
#                           the one make of a kernel tree: make -j$JOBS
#                           MAKE-ARG... under the lock, at niceness ZWM_NICE
#                           (default 0), output in LOG; on failure LOG's
#                           tail goes to stderr and it returns 1
#   build_kernel WHAT LOG MAKE-ARG...
#                           kernel_make, or die "WHAT did not build"; sets
#                           BUILD_SECS to the seconds it took
# JOBS is make's -j: ZWM_JOBS, default nproc+1.
now() { date +%s; }

# The releases the series is built on: release, Debian suite.  7.3 is
# experimental's release candidate, the newest source Debian has.
SOURCES="
7.2 sid
7.3 experimental
"
series_source() {
    local rel=${1:-7.2} suite root
    suite=$(awk -v r="$rel" '$1 == r {print $2}' <<<"$SOURCES")
    [ -n "$suite" ] || die "no Debian source for release $rel (known: $(awk 'NF {printf "%s ", $1}' <<<"$SOURCES"))"
    TARDIR=linux-source-$rel
    root=$("$REPO/scripts/fetch-debian-kernel.sh" "$suite" amd64 "$TARDIR") || die "fetching $TARDIR failed"
    TARBALL=$root/usr/src/$TARDIR.tar.xz
    [ -f "$TARBALL" ] || die "no $TARBALL"
    # 0000-* is the cover letter: no diff to apply.
    # shellcheck disable=SC2010 # git format-patch names: NNNN-subject.patch
    mapfile -t PATCHES < <(ls "${ZWM_SERIES:-$REPO/kernel}"/[0-9][0-9][0-9][0-9]-*.patch | grep -v '/0000-[^/]*$')
    [ ${#PATCHES[@]} -gt 0 ] || die "no ${ZWM_SERIES:-$REPO/kernel}/NNNN-*.patch"
}

# series_diffs: the series' diffs without their changelogs, for the stamps
# of what is built from it: a reworded message must not cost a rebuild.
series_diffs() { awk 'FNR == 1 {d = 0} /^diff --git / {d = 1} d' "${PATCHES[@]}"; }

unpack_tree() {
    local dir=$1 series=$2 stamp
    stamp=$(stat -c '%s %Y' "$TARBALL")
    [ "$series" = 0 ] || stamp="$stamp $(series_diffs | sha256sum)"
    if [ -f "$dir/.zwm-stamp" ] && [ "$(cat "$dir/.zwm-stamp")" = "$stamp" ]; then
        return 0
    fi
    log "unpacking $(basename "$dir")"
    rm -rf "$dir"; mkdir -p "$dir"
    tar -xJf "$TARBALL" -C "$dir" --strip-components=1
    if [ "$series" = 1 ]; then
        (cd "$dir" && git apply "${PATCHES[@]}") || die "the series does not apply"
    fi
    echo "$stamp" > "$dir/.zwm-stamp"
}

unhooked() {
    local obj=$1 rel=$2 out=$3 link
    link=$(sed -n "s|^savedcmd_$rel := ||p" "$obj/$(dirname "$rel")/.$(basename "$rel").cmd")
    case "$link" in
        *" -o $rel "*"; : zero-weak-mcount"*) ;;
        *" -o $rel "*) cp "$obj/$rel" "$out"; return;;
        *) die "unexpected link command for $rel: $link";;
    esac
    link=${link%%; : zero-weak-mcount*}
    (cd "$obj" && eval "${link/ -o $rel / -o $out }") || die "relinking $rel failed"
}

locked() {
    if [ -n "${ZWM_BUILD_LOCK:-}" ]; then flock "$ZWM_BUILD_LOCK" "$@"; else "$@"; fi
}

install_config() {
    local new=$1 obj=$2
    if ! cmp -s "$new/.config" "$obj/.config" 2>/dev/null; then
        mkdir -p "$obj"; cp "$new/.config" "$obj/.config"
    fi
    rm -rf "$new"
}

kernel_config() {
    local script=$1 src=$2 obj=$3
    shift 3
    locked "$REPO/scripts/kernel-e2e/$script" "$src" "$obj.config-new" "$@" || die "$script for $obj failed"
    install_config "$obj.config-new" "$obj"
}

JOBS=${ZWM_JOBS:-$(( $(nproc) + 1 ))}
# What every kernel build needs on the host, as missing_packages entries.
# gawk too, though mawk builds a kernel: x86's generated cpufeaturemasks.h
# lists the same lines in another order under each, so a host whose awk
# turns from mawk to gawk (installing gawk does that, and kernel-selftests
# needs it for its guest) rebuilds every object of every tree once.
# shellcheck disable=SC2034 # for the scripts that source this file
KBUILD_NEEDS=("make make" "gcc gcc" "flex flex" "bison bison" "bc bc" "patch patch" "xz xz-utils"
    "/usr/include/gelf.h libelf-dev" "/usr/include/openssl/evp.h libssl-dev" "/usr/bin/gawk gawk")
kernel_make() {
    local out=$1
    shift
    locked nice -n "${ZWM_NICE:-0}" make -j"$JOBS" "$@" >"$out" 2>&1 && return 0
    tail -n 30 "$out" >&2
    return 1
}

build_kernel() {
    local what=$1 t0
    shift
    t0=$(now)
    kernel_make "$@" || die "$what did not build (log in $1)"
    # shellcheck disable=SC2034 # for the scripts that source this file
    BUILD_SECS=$(( $(now) - t0 ))
}

# --- the tool's packages and Debian roots (integration-test, dkms-abi, deb-chroot) ---
#   copy_tree DEST          the files git knows in REPO (tracked, or new and
#                           not ignored: what a release tarball holds) into DEST
#   tool_tree               VERSION (Cargo.toml's), PKGDIR (target/pkg-build)
#                           and SRC, a fresh copy_tree under PKGDIR, at a fixed
#                           path (cargo's fingerprints hold it): a rerun
#                           recompiles only what changed
#   build_tool_deb          DEB: SRC through dpkg-buildpackage -us -uc -b with
#                           the profile pkg.zero-weak-mcount.upstream-cargo
#                           (rustup's cargo, crates.io; target/pkg-deb)
#   debian_root DIR ARG...  mmdebstrap ARG... with the .debs it downloads kept
#                           in DIR and given back next time (apt checks each
#                           against the archive's hashes)
#   in_root ROOT CMD...     the shell command line CMD as root in the chroot
#                           ROOT, with /dev, /dev/pts, /proc and APT_CACHE on
#                           its /var/cache/apt/archives bind-mounted in a
#                           private mount namespace; NET=none adds a network
#                           namespace with no interface up; BINDS="DIR..."
#                           binds each host DIR at the same path inside
#   step NAME LOG CMD...    run CMD, its output in LOG, and log its time; on
#                           failure LOG's tail goes to stderr, then die
#   report_line FILE        the tool's --format=json report in FILE
#                           (docs/report-format.md), a line per module:
#                           "STATUS, K weak of N entries[, signed]"
copy_tree() {
    mkdir -p "$1"
    (cd "$REPO" && git ls-files -z -co --exclude-standard | cpio -0 -pdm --quiet "$1") || die "copying the tree failed"
}

tool_tree() {
    VERSION=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$REPO/Cargo.toml" | head -n 1)
    [ -n "$VERSION" ] || die "no version in Cargo.toml"
    PKGDIR=$REPO/target/pkg-build SRC=$REPO/target/pkg-build/zero-weak-mcount-$VERSION
    rm -rf "$SRC" "$PKGDIR"/zero-weak-mcount[_-]*
    copy_tree "$SRC"
}

build_tool_deb() {
    local t=$SECONDS
    (cd "$SRC" && CARGO_TARGET_DIR=$REPO/target/pkg-deb DEB_BUILD_OPTIONS=nocheck \
        dpkg-buildpackage -us -uc -b --build-profiles=pkg.zero-weak-mcount.upstream-cargo) >"$PKGDIR/deb.log" 2>&1 ||
        { tail -n 30 "$PKGDIR/deb.log" >&2; die "dpkg-buildpackage -us -uc -b failed (log: $PKGDIR/deb.log)"; }
    DEB=$(find "$PKGDIR" -maxdepth 1 -name "zero-weak-mcount_${VERSION}_*.deb" -print -quit)
    [ -n "$DEB" ] || die "dpkg-buildpackage made no zero-weak-mcount_${VERSION}_*.deb"
    log "package: dpkg-buildpackage -us -uc -b: $(basename "$DEB") in $((SECONDS - t)) s"
}

debian_root() {
    local cache=$1
    shift
    mkdir -p "$cache"
    mmdebstrap --skip=essential/unlink --setup-hook='mkdir -p "$1"/var/cache/apt/archives' \
        --setup-hook="sync-in $cache /var/cache/apt/archives" \
        --customize-hook="sync-out /var/cache/apt/archives $cache" "$@"
}

in_root() {
    local root=$1 flags=(--mount --propagation private)
    shift
    [ "${NET:-}" != none ] || flags+=(--net)
    unshare "${flags[@]}" bash -c '
        set -e
        root=$1 cache=$2 binds=$3
        shift 3
        mount --bind /dev "$root/dev"
        mount --bind /dev/pts "$root/dev/pts"
        mount --bind /proc "$root/proc"
        mount --bind "$cache" "$root/var/cache/apt/archives"
        for d in $binds; do mkdir -p "$root$d"; mount --bind "$d" "$root$d"; done
        exec env -i HOME=/root TERM=dumb LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive \
            PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
            chroot "$root" /bin/sh -c "$*"' in_root "$root" "${APT_CACHE:?}" "${BINDS:-}" "$@"
}

report_line() {
    jq -r '"\(.status), \(.weak) weak of \(.entries) entries\(if .signed then ", signed" else "" end)"' "$1"
}

step() {
    local name=$1 logf=$2 t=$SECONDS
    shift 2
    "$@" >"$logf" 2>&1 || { tail -n 40 "$logf" >&2; die "$name failed after $((SECONDS - t)) s (log: $logf)"; }
    log "$name: $((SECONDS - t)) s"
}

# --- the integration suites (scripts/integration/*.sh) ---
# scripts/integration-test.sh sets (a suite also runs alone with them set):
#   ZWM_REPO ZWM_WORK       the checkout; the scratch folder of the run
#   ZWM_TOOL                the real tool, as the .deb installed it under ZWM_ROOT
#   ZWM_ROOT ZWM_RPM_ROOT   the scratch roots of the tool's .deb (dpkg --root)
#                           and .rpm (rpm --root); ZWM_DEB is the .deb
#   ZWM_KVER                the release of Debian's headers, e.g. 6.1.0-57-amd64
#   ZWM_HDR                 the arch tree of a private copy of those headers
#                           (make_headers_copy); ZWM_BUILD_LOCK: see locked
#
#   suite_init NAME         PROG=NAME, the variables checked, W a fresh ZWM_WORK/NAME
#   show FILE [PREFIX]      FILE indented into stderr (evidence); finish: the tally
#   need_cmd CMD...         fail unless each CMD is on PATH
#   sha FILE, mtime FILE    its sha256; its mtime (seconds.full)
#   zwm_test_src DEST       testdata/zwm_test's sources (Kbuild, *.c, *.h) into DEST
#   expect_processed FILE [LABEL]
#                           the module (any compression, signed or not) has
#                           been through the tool: --check on its ELF image
#                           exits 0, .rela__mcount_loc has fewer entries
#                           than __mcount_loc has words.  The image stays in
#                           ELF: decompressed, an appended signature cut off
#                           (kept in ELF.p7s), as the kernel sees it
#   expect_unprocessed FILE [LABEL]
#                           the control: --check exits 1 and every
#                           __mcount_loc word still has its relocation
#   make_headers_copy DEST [FROM [KVER]]
#                           Debian's headers of KVER (default ZWM_KVER) as
#                           installed under FROM (default /, or an unpacked
#                           package root), the arch tree, the -common tree
#                           and linux-kbuild-X.Y, copied under DEST with
#                           the links between them kept inside; prints the
#                           copy's arch tree
#   touch_later FILE...     touch, after the clock has moved on (file times
#                           come from a coarse clock: a touch right after a
#                           build may not make a source newer than its target)
suite_init() {
    PROG=$1
    : "${ZWM_REPO:?}" "${ZWM_TOOL:?}" "${ZWM_KVER:?}" "${ZWM_WORK:?}" "${ZWM_ROOT:?}" "${ZWM_RPM_ROOT:?}"
    W=$ZWM_WORK/$PROG
    rm -rf "$W"
    mkdir -p "$W"
}

show() { sed "s/^/$PROG:   ${2:-| }/" "$1" >&2; }
finish() { log "all $N_OK assertions passed"; }

need_cmd() {
    local c
    for c in "$@"; do
        command -v "$c" >/dev/null 2>&1 || fail "required command '$c' is missing (scripts/integration-test.sh installs it)"
    done
}

sha() { sha256sum "$1" | cut -d' ' -f1; }
mtime() { stat -c %Y.%y "$1"; }
zwm_test_src() { mkdir -p "$1" && cp -- "$REPO"/testdata/zwm_test/Kbuild "$REPO"/testdata/zwm_test/*.[ch] "$1/"; }

# module_state FILE WANT LABEL: guest.py modstate (the harness's one ELF
# reader) of FILE into ELF (the image; its signature in ELF.p7s), WHAT, RELOCS
# and WORDS; --check on ELF must exit WANT.
module_state() {
    local f=$1 want=$2 label=$3 state rc=0
    [ -f "$f" ] || fail "$label: $f does not exist"
    ELF=$(mktemp "$ZWM_WORK/elf.XXXXXX.ko")
    state=$(python3 "$GUEST/guest.py" modstate "$f" "$ELF") || fail "$label: guest.py cannot read $f"
    read -r RELOCS WORDS WHAT <<<"$state"
    "$ZWM_TOOL" --check "$ELF" 2>"$ELF.check" || rc=$?
    [ "$rc" = "$want" ] || { show "$ELF.check"; fail "$label: --check exits $rc, not $want ($WHAT; .rela__mcount_loc $RELOCS of $WORDS words)"; }
}

expect_processed() {
    local label=${2:-$1}
    module_state "$1" 0 "$label: NOT processed"
    [ "$RELOCS" -lt "$WORDS" ] || fail "$label: NOT processed: .rela__mcount_loc has $RELOCS entries for $WORDS __mcount_loc words ($WHAT)"
    ok "$label is processed: $WHAT; --check exits 0; .rela__mcount_loc $RELOCS entries for $WORDS __mcount_loc words"
}

expect_unprocessed() {
    local label=${2:-$1}
    module_state "$1" 1 "$label: expected an unprocessed module"
    [ "$RELOCS" = "$WORDS" ] || fail "$label: expected all $WORDS __mcount_loc words relocated, found $RELOCS"
    ok "$label is unprocessed (control): $WHAT; --check exits 1; .rela__mcount_loc $RELOCS entries for $WORDS words"
}

make_headers_copy() {
    local dest=$1 from=${2:-} kver=${3:-$ZWM_KVER} arch common kbdir l t
    arch=/usr/src/linux-headers-$kver
    [ -f "$from$arch/Makefile" ] || fail "$from$arch/Makefile missing (linux-headers-$kver not installed)"
    common=$(sed -n 's|^include \(/.*\)/Makefile$|\1|p' "$from$arch/Makefile")
    kbdir=$(readlink -f "$from$arch/scripts")
    kbdir=${kbdir%/scripts}
    [ -d "$kbdir/scripts" ] || fail "$from$arch/scripts does not resolve to a linux-kbuild tree"
    kbdir=${kbdir#"$from"}
    mkdir -p "$dest/usr/src" "$dest$(dirname "$kbdir")"
    cp -a -- "$from$arch" "$dest/usr/src/"
    if [ -n "$common" ]; then
        [ -d "$from$common" ] || fail "$arch/Makefile includes $common/Makefile, which is missing"
        cp -a -- "$from$common" "$dest/usr/src/"
        # the arch tree's Makefile includes the -common one by absolute path
        sed -i "s|^include $common/Makefile\$|include $dest$common/Makefile|" "$dest$arch/Makefile"
    fi
    # 7.2 also sets KBUILD_OUTPUT=<arch tree> there
    sed -i "s|^KBUILD_OUTPUT=$arch\$|KBUILD_OUTPUT=$dest$arch|" "$dest$arch/Makefile"
    cp -a -- "$from$kbdir" "$dest$(dirname "$kbdir")/"
    # every symlink of the copy must stay inside the copy
    while IFS= read -r l; do
        t=$(readlink -f -- "$l")
        case "$t" in "$dest"/*) ;; *) fail "headers copy: $l points outside the copy ($t)";; esac
    done < <(find "$dest" -type l)
    echo "$dest$arch"
}

touch_later() { sleep 0.05 && touch "$@"; }
