#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""extract.py TARBALL PATCHDIR NAME...: the definitions NAME... (functions and
structs, in that order) as they stand in kernel/module/kallsyms.c and
kernel/trace/ftrace.c once the patches of PATCHDIR (its NNNN-*.patch, a
cover letter 0000-* aside) are applied to the linux-source TARBALL.

The code is taken from the patched files at run time, byte for byte, so
that verbatim.c measures what a series really adds, not a model of it;
nothing of it is stored in this repository. Fails if a patch does not apply
or a NAME has no definition."""
import glob
import os
import re
import subprocess
import sys
import tempfile

FILES = ["kernel/module/kallsyms.c", "kernel/trace/ftrace.c", "include/linux/module.h"]


def patched(tarball, patchdir, tmp):
    top = os.path.basename(tarball).removesuffix(".tar.xz")
    subprocess.run(["tar", "-xJf", tarball, "-C", tmp, "--strip-components=1"]
                   + [f"{top}/{f}" for f in FILES], check=True)
    patches = sorted(p for p in glob.glob(os.path.join(os.path.abspath(patchdir), "[0-9][0-9][0-9][0-9]-*.patch"))
                     if not os.path.basename(p).startswith("0000-"))
    if not patches:
        sys.exit(f"extract.py: no NNNN-*.patch in {patchdir}")
    subprocess.run(["git", "apply", *[f"--include={f}" for f in FILES], *patches], cwd=tmp, check=True)
    return [open(os.path.join(tmp, f)).read().splitlines() for f in FILES[:2]]


def definition(lines, name):
    head = re.compile(rf"^(struct {re.escape(name)} {{|\S.*\b{re.escape(name)}\()")
    for i, line in enumerate(lines):
        if not head.match(line):
            continue
        depth, out = 0, []
        for line in lines[i:]:
            out.append(line)
            if depth == 0 and "{" not in line and line.rstrip().endswith(";"):
                break  # a declaration, not the definition
            depth += line.count("{") - line.count("}")
            if depth == 0 and "{" in "".join(out):
                return "\n".join(out)
    return None


def main():
    tarball, patchdir, names = sys.argv[1], sys.argv[2], sys.argv[3:]
    with tempfile.TemporaryDirectory() as tmp:
        files = patched(tarball, patchdir, tmp)
    for name in names:
        found = next((d for d in (definition(f, name) for f in files) if d), None)
        if found is None:
            sys.exit(f"extract.py: no definition of {name} in the patched files")
        print(f"/* {name}, verbatim */\n{found}\n")


if __name__ == "__main__":
    main()
