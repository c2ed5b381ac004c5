#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# scripts/lint.sh: the static checks (`make lint`, first in `make check`).
#
#   - rustfmt, and clippy (every target, pedantic, warnings as errors), over
#     the workspace (the tool, bench/) and fuzz/ (no member: scripts/fuzz.sh);
#   - rustdoc over the tool, warnings (dead links) as errors;
#   - ShellCheck over every tracked shell file: *.sh and any file whose
#     first line is a sh, dash or bash shebang (settings: .shellcheckrc);
#   - pyflakes over every tracked Python file: *.py and python shebangs;
#   - tests/docs.rs: the docs' links, sections, targets, checked commands, sizes.
# Every check runs; the script then exits 1 naming those that failed.
# Needs cargo with clippy and rustfmt, shellcheck, pyflakes3 and git (the
# files are those `git ls-files` lists).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
PROG=lint
. "$REPO/scripts/lib.sh"
cd "$REPO"

[ $# = 0 ] || arg_error "$1"
for t in cargo git shellcheck pyflakes3; do
    command -v "$t" >/dev/null || die "$t not found (apt-get install shellcheck pyflakes3)"
done
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || die "$REPO is no git checkout: the files to check are the tracked ones"

# Tracked files (that exist in the work tree) by extension or shebang.
tracked() { # EXT SHEBANG-REGEX
    local f first
    while IFS= read -r -d '' f; do
        [ -f "$f" ] || continue
        case "$f" in
            *."$1") printf '%s\n' "$f";;
            *)
                first=
                IFS= read -r first <"$f" || true
                if [[ $first =~ $2 ]]; then printf '%s\n' "$f"; fi;;
        esac
    done < <(git ls-files -z)
}
mapfile -t SHELL_FILES < <(tracked sh '^#!.*[/ ](sh|dash|bash)( |$)')
mapfile -t PYTHON_FILES < <(tracked py '^#!.*[/ ]python3?( |$)')

failed=()
check() { # NAME CMD...
    local name=$1
    shift
    log "$name"
    "$@" || failed+=("$name")
}

check "rustfmt (workspace)" cargo fmt --all --check
check "rustfmt (fuzz/)" cargo fmt --manifest-path fuzz/Cargo.toml --check
check "clippy (workspace)" cargo clippy --quiet --workspace --all-targets -- -D warnings -W clippy::pedantic
check "clippy (fuzz/)" cargo clippy --quiet --manifest-path fuzz/Cargo.toml --all-targets -- -D warnings -W clippy::pedantic
check "rustdoc" env RUSTDOCFLAGS='-D warnings' cargo doc --quiet --no-deps
check "shellcheck (${#SHELL_FILES[@]} files)" shellcheck "${SHELL_FILES[@]}"
check "pyflakes (${#PYTHON_FILES[@]} files)" pyflakes3 "${PYTHON_FILES[@]}"
check "docs (tests/docs.rs)" cargo test --quiet --test docs

if [ ${#failed[@]} -gt 0 ]; then
    die "failed: $(printf '%s, ' "${failed[@]}" | sed 's/, $//')"
fi
log "PASS: rustfmt, clippy, rustdoc, shellcheck (${#SHELL_FILES[@]} files), pyflakes (${#PYTHON_FILES[@]} files), docs"
