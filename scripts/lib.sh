# SPDX-License-Identifier: GPL-2.0-only
# scripts/lib.sh: helpers shared by the top-level scripts (sourced, bash).
#
# Before sourcing, set PROG (the prefix of every message) and REPO (the
# checkout); DIE_STATUS is die's exit status (default 1).
#
#   log MSG...              "PROG: MSG" on stderr
#   die MSG...              "PROG: error: MSG" on stderr, then exit
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

log() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { log "error: $*"; exit "${DIE_STATUS:-1}"; }

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
