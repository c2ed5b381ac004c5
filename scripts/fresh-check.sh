#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The README's two commands, word for word, on a fresh machine: a new
# Debian bookworm root (mmdebstrap --variant=apt) with only gcc, libc6-dev,
# make, git, ca-certificates and python3, the host's Rust toolchain
# (~/.rustup, ~/.cargo) bind-mounted, and a fresh clone of this checkout's
# HEAD (uncommitted changes are not in it, as they would not be in a
# newcomer's clone). The commands are the indented lines after the two
# `<!-- fresh-check: ... -->` markers of README.md, so they cannot drift;
# the first command's output must be the block the README shows after it.
#
# Usage: scripts/fresh-check.sh [--keep DIR]
#   --keep DIR  build the root in DIR and leave it there (default: a
#               temporary folder, removed at the end)
#
# Needs root (mmdebstrap's root mode, mounts, chroot); installs mmdebstrap
# when it is missing.
set -euo pipefail

PROG="fresh-check"
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=lib.sh
. "$REPO/scripts/lib.sh"

keep=""
while [ $# -gt 0 ]; do
    case "$1" in
        --keep) [ $# -ge 2 ] || die "--keep needs a folder"; keep=$2; shift 2;;
        *) arg_error "$1";;
    esac
done

[ "$(id -u)" = 0 ] || die "needs root (mmdebstrap root mode, bind mounts, chroot)"
missing_packages "mmdebstrap mmdebstrap" "/usr/share/keyrings/debian-archive-keyring.gpg debian-archive-keyring" \
    "unshare util-linux"
install_packages "${MISSING[@]}"

rustup_home=${RUSTUP_HOME:-$HOME/.rustup}
cargo_home=${CARGO_HOME:-$HOME/.cargo}
[ -x "$cargo_home/bin/cargo" ] || die "no Rust toolchain at $cargo_home/bin/cargo (install it with rustup, README)"
[ -d "$rustup_home/toolchains" ] || die "no rustup toolchains in $rustup_home"

# The README's commands: the first indented line after each marker.
readme_commands() {
    awk '/^<!-- fresh-check: /{want=1; next} want && /^    [^ ]/{sub(/^    /, ""); print; want=0}' "$REPO/README.md"
}
# What the README says the first command prints: the indented block after
# "It prints", up to the next blank line.
readme_output() {
    awk '/^It prints /{want=1; next} want && /^    /{sub(/^    /, ""); print; seen=1; next}
        want && seen && /^$/{exit}' "$REPO/README.md"
}
mapfile -t commands < <(readme_commands)
[ "${#commands[@]}" = 2 ] || die "README.md has ${#commands[@]} fresh-check commands, expected 2: ${commands[*]}"
expected=$(readme_output)
[ -n "$expected" ] || die "README.md shows no output for the first command (the block after \"It prints\")"

work=$(work_dir "$keep" "${TMPDIR:-/tmp}/fresh-check.XXXXXX")
[ -n "$keep" ] || trap 'rm -rf --one-file-system "$work"' EXIT
root=$work/root
[ ! -e "$root" ] || die "$root exists; give --keep an empty folder"

start=$SECONDS
log "mmdebstrap bookworm into $root"
# The .debs are kept across runs (debian_root; apt checks their hashes).
APT_CACHE=${ZWM_CACHE:-$HOME/.cache/zero-weak-mcount}/fresh-check
debian_root "$APT_CACHE" --variant=apt --quiet --include=gcc,libc6-dev,make,git,ca-certificates,python3 \
    bookworm "$root" >"$work/mmdebstrap.log" 2>&1 || { cat "$work/mmdebstrap.log" >&2; die "mmdebstrap failed"; }
log "root ready in $((SECONDS - start)) s"
git clone --quiet "$REPO" "$root/root/zero-weak-mcount" || die "git clone of $REPO failed"
log "clone of HEAD $(git -C "$REPO" rev-parse --short HEAD)"

# The host's toolchain, bound at the same paths inside (in_root's BINDS).
n=0
for cmd in "${commands[@]}"; do
    n=$((n + 1)) t=$SECONDS
    log "command $n: $cmd"
    BINDS="$rustup_home $cargo_home" in_root "$root" "export RUSTUP_HOME=$rustup_home CARGO_HOME=$cargo_home \
        PATH=$cargo_home/bin:\$PATH && cd /root/zero-weak-mcount && $cmd" >"$work/out$n.log" 2>&1 ||
        { log "command $n failed after $((SECONDS - t)) s: $cmd"; tail -n 40 "$work/out$n.log" >&2; exit 1; }
    log "command $n passed in $((SECONDS - t)) s"
done

# The tool's own lines of the first command's output (cargo's are
# indented or start with its verbs).
got=$(grep '^zero-weak-mcount: ' "$work/out1.log" || true)
if [ "$got" != "$expected" ]; then
    diff <(printf '%s\n' "$expected") <(printf '%s\n' "$got") >&2 || true
    die "the first command printed other lines than the README shows (- README, + printed)"
fi
log "the first command printed the README's $(wc -l <<<"$expected") lines"
summary=$(grep '^test result: ' "$work/out2.log" | awk '{p += $4; f += $6; i += $8} END {print p, f, i}')
read -r passed failed ignored <<<"$summary"
# Plain cargo test skips the tests marked #[ignore] (they need what a
# chroot refuses, a mount namespace; make test runs them): each must be
# listed as ignored, and nothing else.
clone=$root/root/zero-weak-mcount
want_ignored=$(find "$clone/src" "$clone/tests" -name '*.rs' -exec awk '/^ *#\[ignore/ {want=1; next}
    want && /^ *(pub )?fn / {sub(/^ *(pub )?fn /, ""); sub(/\(.*/, ""); print; want=0}' {} + | sort)
got_ignored=$(sed -n 's/^test \(.*::\)\{0,1\}\([a-z0-9_]*\) \.\.\. ignored.*/\2/p' "$work/out2.log" | sort)
if [ "$failed" != 0 ] || [ "$got_ignored" != "$want_ignored" ] || [ "$ignored" != "$(grep -c . <<<"$want_ignored")" ]; then
    diff <(printf '%s\n' "$want_ignored") <(printf '%s\n' "$got_ignored") >&2 || true
    die "cargo test: $passed passed, $failed failed, $ignored ignored (- marked #[ignore], + reported ignored)"
fi
log "both README commands passed in a fresh bookworm root ($((SECONDS - start)) s in all)"
echo "fresh-check: $passed passed, 0 failed, $ignored ignored ($(tr '\n' ' ' <<<"$want_ignored")as marked)"
