#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Compare the kernel selftest boots (scripts/kernel-selftests.sh).

  report.py OUT.md BOOT_DIR...

Each BOOT_DIR holds console.log from one boot with payload selftests.sh,
and files `kernel` (stock or series), `form` (stock, processed,
unchecked, stripped) and selftests.conf.  Several boots may share a form
(one suite each, say): the form's verdicts are theirs together.  Verdicts by name: every ftracetest case ("[N]
description<TAB>[RESULT]"; PASS, FAIL, UNRESOLVED, UNTESTED, UNSUPPORTED,
XFAIL, UNDEFINED), every livepatch test-*.sh (ok: exit 0, skip: exit 4,
else FAIL) and every probe (PASS when it was hit).  What must hold:

  * every boot finished, its preload (modprobe kvm) succeeded, and the
    series boots show no BUG, Oops or ftrace bug beyond what stock shows;
  * every series form gives every test the verdict stock gives it with
    the same modules (stock-FORM where that boot exists, else stock): the
    lists are identical by name (a difference is listed, and fails);
  * the module tests really ran: "ftrace - function trace on module" and
    "Kprobe dynamic event - probing module" PASS in every boot but the
    stripped ones (strip --strip-unneeded drops trace_printk_irq_work, the
    static function both tests name; there they must fail alike);
  * every probe (kprobe, fprobe, function_graph on trace-events-sample's
    do_simple_thread_func, processed and unchecked) was hit in every boot
    but the stripped ones (the function is static, and loses its symbol;
    there they must fail alike).

Writes the side-by-side table to OUT.md; exits 1 if anything fails.
"""
import collections
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "guest"))
import guest  # noqa: E402

ANSI = re.compile(r"\x1b\[[0-9;]*m")
CASE = re.compile(r"^\[(\d+)\](.*?)\s*\[(PASS|FAIL|UNRESOLVED|UNTESTED|UNSUPPORTED|XFAIL|UNDEFINED)\]\s*$")
VERDICT = re.compile(r"^\[(PASS|FAIL|UNRESOLVED|UNTESTED|UNSUPPORTED|XFAIL|UNDEFINED)\]$")
START = re.compile(r"^\[\d+\][^\[]*?(?=\+ |$)")
MUST_PASS = ("ftrace - function trace on module", "Kprobe dynamic event - probing module")
# Kernel-log lines that mean a bug, unlike the WARNINGs some ftrace tests
# provoke on purpose.
BUG = ("BUG:", "Oops", "ftrace bug", "ftrace failed", "Kernel panic")


def verdicts(con):
    out, pending = {}, None
    for ln in con["blocks"].get(("FTRACETEST", None), []):
        ln = ANSI.sub("", ln).strip()
        # A test's own output (its set -x, a trap) may come between its
        # "[N] description" and its verdict, which then ends a later line.
        m = CASE.match(ln) or (pending and VERDICT.match(ln) and CASE.match(pending + "\t" + ln))
        if m:
            name = "ftrace: " + m[2].strip()
            while name in out:       # the same description twice (instances)
                name += " (again)"
            out[name], pending = m[3], None
        elif START.match(ln):
            pending = START.match(ln)[0]
    for f in guest.marked(con, "LIVEPATCH-RC"):
        rc = f[1].split("=")[1]
        out["livepatch: " + f[0]] = {"0": "PASS", "4": "SKIP"}.get(rc, f"FAIL (exit {rc})")
    for f in guest.marked(con, "PROBE"):
        out[f"probe: {f[1]} on trace-events-sample, {f[0]}"] = "PASS" if f[2] != "hits=0" else "FAIL (no hit)"
    return out


def read_boot(d):
    con = guest.read_console(d)
    conf = (d / "selftests.conf").read_text()
    suites = conf.split("\n")[0].split("=", 1)[1].strip('"').split()
    return {"dir": d, "form": (d / "form").read_text().strip(), "con": con, "v": verdicts(con),
            "kernel": (d / "kernel").read_text().strip(), "conf": conf, "suites": suites,
            # Whether the boot ran the whole of ftracetest, or only some of it.
            "ftrace_all": "ftrace" in suites and 'FTRACE_TESTS=""' in conf}


def check_boot(b):
    """What one boot must show on its own."""
    fails, con = [], b["con"]
    if not con["end"]:
        fails.append(f"{b['form']}: the guest did not finish ({b['dir']})")
    for f in guest.marked(con, "PRELOAD"):
        if f[-1] != "rc=0":
            fails.append(f"{b['form']}: modprobe {f[0]} failed")
    stripped = "stripped" in b["form"]
    ran_ftrace = any(n.startswith("ftrace: ") for n in b["v"]) and not stripped
    for name in MUST_PASS:
        got = b["v"].get("ftrace: " + name, "missing")
        if ran_ftrace and got != "PASS":
            fails.append(f"{b['form']}: '{name}' is {got}, not PASS")
    if not stripped:
        fails += [f"{b['form']}: {n}: {v}" for n, v in b["v"].items() if n.startswith("probe: ") and v != "PASS"]
    if not any(n.startswith("ftrace: ") for n in b["v"]) and "ftrace" in b["suites"]:
        fails.append(f"{b['form']}: no ftracetest verdicts")
    b["bugs"] = [x.strip() for x in con["dmesg"] if any(k in x for k in BUG)] + con["panic"]
    return fails


def merge(boots):
    """One form's verdicts from all its boots (say, one boot per suite): a
    test two boots disagree on gets both verdicts, and so differs."""
    v = {}
    for b in boots:
        for n, x in b["v"].items():
            v[n] = x if v.get(n, x) == x else f"{v[n]} / {x}"
    return {"form": boots[0]["form"], "v": v, "boots": boots,
            "ftrace_all": any(b["ftrace_all"] for b in boots),
            "bugs": {x for b in boots for x in b["bugs"]}}


def main():
    out = Path(sys.argv[1])
    boots = [read_boot(d) for d in map(Path, sys.argv[2:])]
    fails = [f for b in boots for f in check_boot(b)]
    forms = list(dict.fromkeys(b["form"] for b in boots))
    by_form = {f: merge([b for b in boots if b["form"] == f]) for f in forms}
    names = sorted({n for b in boots for n in b["v"]})
    if "stock" in by_form:
        for f, m in by_form.items():
            if f.startswith("stock"):
                continue
            # Each series form against stock with the same modules.
            stock = by_form.get("stock-" + f, by_form["stock"])
            # A form that ran only some of ftracetest is compared on those.
            diff = [n for n in names if m["v"].get(n) != stock["v"].get(n)
                    and not (not m["ftrace_all"] and n.startswith("ftrace: ") and n not in m["v"])]
            fails += [f"{f}: {n}: {m['v'].get(n, 'missing')} (stock: {stock['v'].get(n, 'missing')})" for n in diff]
            new_bugs = m["bugs"] - stock["bugs"]
            fails += [f"{f}: kernel log: {x}" for x in sorted(new_bugs)[:5]]
    merged = [by_form[f] for f in forms]
    rows = ["| test | " + " | ".join(forms) + " |", "|---" * (len(forms) + 1) + "|"]
    for n in names:
        vs = [m["v"].get(n, "-") for m in merged]
        mark = "" if len(set(vs)) == 1 else " **differs**"
        rows.append(f"| {n}{mark} | " + " | ".join(vs) + " |")
    counts = ["| verdict | " + " | ".join(forms) + " |", "|---" * (len(forms) + 1) + "|"]
    tally = [collections.Counter(v.split(" ")[0] for v in m["v"].values()) for m in merged]
    for k in sorted({k for t in tally for k in t}):
        counts.append(f"| {k} | " + " | ".join(str(t.get(k, 0)) for t in tally) + " |")
    times = [f"{b['form']} ({b['kernel']}; {' '.join(b['suites'])}"
             f"{'' if b['ftrace_all'] or 'ftrace' not in b['suites'] else ', some ftracetest cases'}):"
             f" {(b['dir'] / 'boot-seconds').read_text().strip()} s" for b in boots]
    text = ("Boots:\n" + "".join(f"- {t}\n" for t in times) + "\n" + "\n".join(counts) + "\n\n" + "\n".join(rows) + "\n")
    return guest.verdict(out, text, fails, "kernel-selftests")


if __name__ == "__main__":
    sys.exit(main())
