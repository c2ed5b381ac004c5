# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
# scripts/lib.sh: helpers shared by the top-level scripts (sourced, bash).
# (The kernel-series helpers are described at their definitions below.)
#
# Before sourcing, set PROG (the prefix of every message) and REPO (the
# checkout); DIE_STATUS is die's exit status (default 1).
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

unpack_tree() {
    local dir=$1 series=$2 stamp
    stamp=$(stat -c '%s %Y' "$TARBALL")
    [ "$series" = 0 ] || stamp="$stamp $(cat "${PATCHES[@]}" | sha256sum)"
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
# shellcheck disable=SC2034 # for the scripts that source this file
KBUILD_NEEDS=("make make" "gcc gcc" "flex flex" "bison bison" "bc bc" "patch patch" "xz xz-utils"
    "/usr/include/gelf.h libelf-dev" "/usr/include/openssl/evp.h libssl-dev")
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
    BUILD_SECS=$(( $(now) - t0 ))
}
