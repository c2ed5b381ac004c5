#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""extract.py [--undef MACRO] [--file PATH]... TARBALL PATCHDIR NAME...: the
definitions NAME... (functions and structs, in that order) as they stand in
kernel/module/kallsyms.c and kernel/trace/ftrace.c once the patches of
PATCHDIR (its NNNN-*.patch, a cover letter 0000-* aside) are applied to the
linux-source TARBALL.

--undef MACRO reads the files as the preprocessor does with MACRO
undefined, for the conditionals that test it alone (#ifdef, #ifndef,
#if defined(MACRO) && ...): where a file defines one function twice, on
both sides of such a conditional, the side that MACRO's absence compiles
is the one taken. --file [TARBALL:]PATH searches one more file, unpatched,
after the others (an arch's ftrace_call_adjust()): of the tarball, or of
another release's (i386's from 6.1, for a series applied to 7.2).

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


def untar(tarball, tmp, files):
    top = os.path.basename(tarball).removesuffix(".tar.xz")
    os.makedirs(tmp, exist_ok=True)
    subprocess.run(["tar", "-xJf", tarball, "-C", tmp, "--strip-components=1"]
                   + [f"{top}/{f}" for f in files], check=True)
    return [os.path.join(tmp, f) for f in files]


def patched(tarball, patchdir, tmp, extra):
    untar(tarball, tmp, FILES)
    others = []
    for k, e in enumerate(extra):
        src, path = e.split(":", 1) if ":" in e else (tarball, e)
        others += untar(src, tmp if src == tarball else os.path.join(tmp, f"other{k}"), [path])
    patches = sorted(p for p in glob.glob(os.path.join(os.path.abspath(patchdir), "[0-9][0-9][0-9][0-9]-*.patch"))
                     if not os.path.basename(p).startswith("0000-"))
    if not patches:
        sys.exit(f"extract.py: no NNNN-*.patch in {patchdir}")
    subprocess.run(["git", "apply", *[f"--include={f}" for f in FILES], *patches], cwd=tmp, check=True)
    return [open(f).read().splitlines() for f in [os.path.join(tmp, f) for f in FILES[:2]] + others]


def undefine(lines, macro):
    """The lines the preprocessor keeps with @macro undefined, deciding only
    the conditionals on @macro alone; any other use of it in a condition
    is refused rather than guessed."""
    out, stack = [], []   # stack: (decides, taking) per open conditional
    live = True
    for line in lines:
        d = re.match(r"\s*#\s*(ifdef|ifndef|if|elif|else|endif)\b(.*)", line)
        kind, cond = (d.group(1), d.group(2)) if d else (None, "")
        if kind in ("ifdef", "ifndef", "if"):
            mine = re.search(rf"\b{re.escape(macro)}\b", cond) is not None
            if mine and not (kind != "if" and cond.split()[0] == macro
                             or kind == "if" and re.match(rf"\s*defined\({macro}\)\s*&&", cond)):
                sys.exit(f"extract.py: cannot decide #{kind}{cond} with {macro} undefined")
            stack.append((mine, kind == "ifndef", live))
            live = live and (not mine or kind == "ifndef")
            if mine:
                continue
        elif kind in ("elif", "else") and stack[-1][0]:
            if kind == "elif":
                sys.exit(f"extract.py: cannot decide #elif after a test of {macro}")
            mine, taking, outer = stack[-1]
            live = outer and not taking
            continue
        elif kind == "endif":
            mine, _, outer = stack.pop()
            if mine:
                live = outer
                continue
        if live:
            out.append(line)
    return out


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
    args, undef, extra = sys.argv[1:], None, []
    while args and args[0] in ("--undef", "--file"):
        if args[0] == "--undef":
            undef = args[1]
        else:
            extra.append(args[1])
        args = args[2:]
    tarball, patchdir, names = args[0], args[1], args[2:]
    with tempfile.TemporaryDirectory() as tmp:
        files = patched(tarball, patchdir, tmp, extra)
    if undef:
        files = [undefine(f, undef) for f in files]
    for name in names:
        found = next((d for d in (definition(f, name) for f in files) if d), None)
        if found is None:
            sys.exit(f"extract.py: no definition of {name} in the patched files")
        print(f"/* {name}, verbatim */\n{found}\n")


if __name__ == "__main__":
    main()
