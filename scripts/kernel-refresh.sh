#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# kernel-refresh.sh — regenerate kernel/*.patch after Makefile.snippet changed.
#
# The series adds the snippet to the kernel as
# scripts/Makefile.zero-weak-mcount, and `scripts/kernel-e2e.sh --quick`
# fails when the two differ.  This rebuilds the series in a scratch git
# repository holding only the files it touches (from Debian's
# linux-source-7.2), with the current snippet folded into the patch that
# adds it, and writes it back with the same format-patch options.  Messages, authors
# and the other patches are kept.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
die() { echo "kernel-refresh: error: $*" >&2; exit 2; }
root=$("$REPO/scripts/fetch-debian-kernel.sh" sid amd64 linux-source-7.2) || die "fetch failed"
mapfile -t patches < <(ls "$REPO"/kernel/*.patch)
mapfile -t touched < <(sed -n 's|^--- a/||p' "${patches[@]}" | sort -u)
t=$(mktemp -d /tmp/zwm-kernel-refresh.XXXXXX)
trap 'rm -rf "$t"' EXIT
tar -xJf "$root/usr/src/linux-source-7.2.tar.xz" -C "$t" --strip-components=1 "${touched[@]/#/linux-source-7.2/}"
cd "$t"
g() { git -c user.name=base -c user.email=base@localhost "$@"; }
g init -q . && g add -A && g commit -qm base
# Apply the series one patch at a time; the one that adds the hook gets the
# current snippet folded in, keeping its author as the committer too, as
# format-patch shows.
for p in "${patches[@]}"; do
    g am -q "$p"
    if grep -q '^+++ b/scripts/Makefile.zero-weak-mcount$' "$p"; then
        cp "$REPO/Makefile.snippet" scripts/Makefile.zero-weak-mcount
        git add scripts/Makefile.zero-weak-mcount
        GIT_COMMITTER_NAME="$(git log -1 --format=%an)" GIT_COMMITTER_EMAIL="$(git log -1 --format=%ae)" \
            git commit -q --amend --no-edit --allow-empty
    fi
done
rm -f "$REPO"/kernel/*.patch
git format-patch -q --zero-commit --no-signature -o "$REPO/kernel" "HEAD~${#patches[@]}"
echo "kernel-refresh: wrote $(ls "$REPO"/kernel/*.patch | wc -l) patches to kernel/" >&2
