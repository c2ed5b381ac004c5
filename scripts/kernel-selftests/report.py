#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Judge the kernel selftest boots (scripts/kernel-selftests.sh): the one
reader of their KTAP.

  report.py OUT.md BOOT_DIR...
  report.py --weak OUT.md WEAK_BOOT_DIR...

Each BOOT_DIR holds console.log from one boot with payload selftests.sh,
and files `kernel` (stock or series), `form` (stock, processed,
unchecked, stripped) and selftests.conf.  Several boots may share a form
(one suite each, say): the form's verdicts are theirs together.  Verdicts by name, from
the KTAP the suites print (ftracetest -K; kselftest's runner for
livepatch): "ok N NAME" is PASS, "not ok N NAME" FAIL, and a directive
("# SKIP", "# XFAIL", ftracetest's "# UNRESOLVED") is the verdict
itself; and every probe (PASS when it was hit).  What must hold:

  * every boot finished, its preload (modprobe kvm) succeeded, each
    suite's KTAP has as many results as its plan (1..N) says, and the
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

--weak judges the boots of the series' own selftest instead, each
WEAK_BOOT_DIR named weak-CASE (stock, lookup, stock-processed, series,
unsupported, unresolved) and running ftracetest's
func_dead_weak_module.tc alone: its KTAP verdict must be FAIL on stock as
built, and for the reason the case tests (its summary line shows the
function's own record, a dead record right after it, by address, and the
fprobe never hit), FAIL with patch 1 alone with the dead record listed and
the fprobe hit once, PASS processed by the tool and on the series,
UNSUPPORTED (KTAP SKIP) for a module whose dead body lies elsewhere and
UNRESOLVED for one that does not load; and each boot finished within its
bound (ftracetest's too), its KTAP as long as its plan.  Writes the table to OUT.md (weak.md).
"""
import collections
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "guest"))
import guest  # noqa: E402

KTAP = re.compile(r"^(ok|not ok) \d+ (.*?)(?: # (.*))?$")
PLAN = re.compile(r"^1\.\.(\d+)")
# The module tests that must pass, by name, and the case file that runs each.
MUST_PASS = {"ftrace - function trace on module": "test.d/ftrace/func_mod_trace.tc",
             "Kprobe dynamic event - probing module": "test.d/kprobe/kprobe_module.tc"}
# Kernel-log lines that mean a bug, unlike the WARNINGs some ftrace tests
# provoke on purpose.
BUG = ("BUG:", "Oops", "ftrace bug", "ftrace failed", "Kernel panic")


def ktap(lines, prefix):
    """{name: verdict} of a KTAP block's top-level results, and how many
    its plan announced (None: no plan)."""
    out, plan = {}, None
    for ln in lines:
        ln = ln.strip()
        m = KTAP.match(ln)
        if PLAN.match(ln):
            plan = int(PLAN.match(ln)[1])
        elif m:
            word = (m[3] or "").split(" ")[0]
            v = word if word in ("SKIP", "XFAIL", "UNRESOLVED") else "PASS" if m[1] == "ok" else \
                "FAIL" + (f" ({m[3]})" if m[3] else "")
            name = prefix + m[2].removeprefix("selftests: livepatch: ")
            while name in out:       # the same description twice
                name += " (again)"
            out[name] = v
    return out, plan


def verdicts(con):
    out, plans = {}, {}
    for suite in ("ftrace", "livepatch"):
        if ("KTAP", suite) in con["blocks"]:
            v, plans[suite] = ktap(con["blocks"][("KTAP", suite)], suite + ": ")
            out.update(v)
            plans[suite] = (plans[suite], len(v))
    for f in guest.marked(con, "PROBE"):
        out[f"probe: {f[1]} on trace-events-sample, {f[0]}"] = "PASS" if f[2] != "hits=0" else "FAIL (no hit)"
    return out, plans


def read_boot(d):
    con = guest.read_console(d)
    v, plans = verdicts(con)
    conf = (d / "selftests.conf").read_text()
    suites = conf.split("\n")[0].split("=", 1)[1].strip('"').split()
    return {"dir": d, "form": (d / "form").read_text().strip(), "con": con, "v": v, "plans": plans,
            "kernel": (d / "kernel").read_text().strip(), "conf": conf, "suites": suites,
            # Whether the boot ran the whole of ftracetest, or only some of it.
            "ftrace_all": "ftrace" in suites and 'FTRACE_TESTS=""' in conf}


def check_boot(b):
    """What one boot must show on its own."""
    fails, con = [], b["con"]
    if why := guest.unjudged(con):
        fails.append(f"{b['form']}: {why} ({b['dir']})")
    for f in guest.marked(con, "PRELOAD"):
        if f[-1] != "rc=0":
            fails.append(f"{b['form']}: modprobe {f[0]} failed")
    stripped = "stripped" in b["form"]
    ran_ftrace = any(n.startswith("ftrace: ") for n in b["v"]) and not stripped
    for name, case in MUST_PASS.items():
        got = b["v"].get("ftrace: " + name, "missing")
        # A boot of chosen cases (--cases) answers only for those.
        if ran_ftrace and (b["ftrace_all"] or case in b["conf"]) and got != "PASS":
            fails.append(f"{b['form']}: '{name}' is {got}, not PASS")
    if not stripped:
        fails += [f"{b['form']}: {n}: {v}" for n, v in b["v"].items() if n.startswith("probe: ") and v != "PASS"]
    for s in ("ftrace", "livepatch"):
        plan, got = b["plans"].get(s, (None, 0))
        if s in b["suites"] and (not got or plan != got):
            fails.append(f"{b['form']}: {s}: {got} KTAP results, plan 1..{plan}")
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


WEAK_TEST = "ftrace: ftrace - no record for a dead weak body, and a probe on the function before it fires"
# The case's own summary line, in the log of a run that did not pass.
WEAK_SUMMARY = re.compile(r"^test_ftrace_weak_before: own record (\d+), dead records (\d+) \((\d+) after"
                          r" test_ftrace_weak_before\), probe hits (\d+)$", re.M)
# case: kernel, the module's form, the verdict it must have, and for a FAIL
# the reason: the function's own record and a dead one right after it, and
# the fprobe's hits: none on stock, one with patch 1 alone (the lookup
# fixed, the dead record kept).
WEAK_CASES = {"stock": ("stock", "as built", "FAIL", "0"),
              "lookup": ("stock with patch 1 alone", "as built", "FAIL", "1"),
              "stock-processed": ("stock", "processed by the tool", "PASS"),
              "series": ("series", "as built", "PASS"),
              # ftracetest's KTAP gives UNSUPPORTED as SKIP; the stock case,
              # on the same kernel, shows that the requires line holds there.
              "unsupported": ("stock", "a notrace function before the weak body", "SKIP"),
              "unresolved": ("series", "cut short, does not load", "UNRESOLVED")}


def weak(out, dirs):
    """The --weak boots: a row per case, and what does not hold."""
    rows = ["The series' selftest, test.d/ftrace/func_dead_weak_module.tc (--weak):", "",
            "| case | kernel | test_ftrace_weak.ko | verdict | own record / dead records / right after it / probe hits"
            " | expected | holds |",
            "|---|---|---|---|---|---|---|"]
    fails = []
    for d in dirs:
        case = d.name.removeprefix("weak-")
        if case not in WEAK_CASES:
            sys.exit(f"report.py --weak: {d}: not a boot of a --weak case ({', '.join(WEAK_CASES)})")
        kernel, form, want, *hits = WEAK_CASES[case]
        text = (d / "console.log").read_bytes().decode("utf-8", "replace").replace("\r", "")
        con = guest.parse(text)
        v, plans = verdicts(con)
        got = v.get(WEAK_TEST, "no verdict")
        m = WEAK_SUMMARY.search(text)
        seen = " / ".join(m.groups()) if m else "-"
        if "@@ZWM FTRACE-TIMEOUT" in text:
            fails.append(f"{case}: ftracetest reached its bound")
        holds = got == want
        if want == "FAIL":
            # Failing for the reason the case tests, not another.
            holds = holds and m is not None and m[1] == "1" and int(m[3]) > 0 and [m[4]] == hits
        if not holds:
            fails.append(f"{case}: {got}, {seen} (must be {want})")
        if why := guest.unjudged(con):
            fails.append(f"{case}: {why} ({d})")
        plan, results = plans.get("ftrace", (None, 0))
        if not results or plan != results:
            fails.append(f"{case}: ftrace: {results} KTAP results, plan 1..{plan}")
        rows.append(f"| {case} | {kernel} | {form} | {got} | {seen} | {want} | {'yes' if holds else 'no'} |")
    return guest.verdict(out, "\n".join(rows) + "\n", fails, "kernel-selftests --weak")


def main():
    if sys.argv[1:2] == ["--weak"]:
        return weak(Path(sys.argv[2]), [Path(d) for d in sys.argv[3:]])
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
