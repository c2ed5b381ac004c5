#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""How much of each patch of the series is also in a peer's patches.

  overlap.py PEER_DIR PATCH...

For each PATCH: of the lines it adds, how many a patch in PEER_DIR (every
*.patch there) adds too, compared with whitespace collapsed.  The figure
that counts is over the added lines that hold a letter or a digit; lines of
punctuation alone ("{", "}", "*/") are listed apart, since any two C
patches share them.  Issue 29 keeps every patch of the series under 10 %
against the posted v2 (docs/kernel-bench.md says where that lives).
"""
import collections
import re
import sys
from pathlib import Path


def added(path):
    """The lines PATH adds, whitespace collapsed (not the +++ headers)."""
    out = []
    for ln in Path(path).read_text(errors="replace").splitlines():
        if ln.startswith("+") and not ln.startswith("+++"):
            out.append(" ".join(ln[1:].split()))
    return out


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__.strip())
    peer = set()
    peers = sorted(Path(sys.argv[1]).glob("*.patch"))
    if not peers:
        sys.exit(f"overlap.py: no *.patch in {sys.argv[1]}")
    for p in peers:
        peer.update(added(p))
    print("| patch | added lines with a letter or digit | also the peer's | overlap | punctuation-only lines shared |")
    print("|---|---|---|---|---|")
    for p in sys.argv[2:]:
        lines = added(p)
        words = [ln for ln in lines if re.search(r"[A-Za-z0-9]", ln)]
        shared = [ln for ln in words if ln in peer]
        punct = collections.Counter(ln for ln in lines if ln and ln not in words and ln in peer)
        pct = f"{100 * len(shared) / len(words):.1f} %" if words else "-"
        print(f"| {Path(p).name} | {len(words)} | {len(shared)} | {pct} | "
              + (", ".join(f"`{k}` x{n}" for k, n in sorted(punct.items())) or "none") + " |")
        for ln in shared:
            print(f"|   | | `{ln}` | | |")


if __name__ == "__main__":
    main()
