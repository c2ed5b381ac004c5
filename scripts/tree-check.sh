#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# tree-check.sh — run `zero-weak-mcount --check --format=json` over whole Debian module
# trees, with and without the package's own --kconfig, and compare the two
# runs module by module (see docs/trees.md).
#
# Usage: scripts/tree-check.sh [--trees LIST] [--work DIR] [--keep] [-j N]
#
# A tree is SUITE-DEBARCH (the newest build scripts/fetch-debian-kernel.sh
# gets for it) or SUITE-DEBARCH@ABI (an ABI already unpacked in the cache, for
# instance trixie-ppc64el@6.12.107+deb13-powerpc64le, which the mirror no
# longer serves; it is never fetched).
# Default: the seven trees in $DEFAULT_TREES below (each fetched).
#
# For each tree: every module under lib/modules/KVER/kernel is copied as a
# plain ELF (decompressed, signature stripped), so that "would change" means
# "has entries to zero" and nothing else; then
#   zero-weak-mcount --check --format=json -j N COPY               (the default rules)
#   zero-weak-mcount --check --format=json -j N --kconfig CFG COPY   (the package config)
# Reported per tree: modules, modules that would change, entries zeroed,
# entries kept for doubt, errors, modules where both runs zero exactly the
# same entries (section+offset), the kinds of difference, and the invariant-1
# violations: entries the run without --kconfig zeroes but the --kconfig run
# keeps. Also the count of symbols named '$*' or 'L0*' (kallsyms rules of
# 6.1-6.5 and 7.2 differ on them).
#
# Environment: ZWM (tool binary, see scripts/lib.sh find_tool), ZWM_CACHE
# (see scripts/fetch-debian-kernel.sh).
# Exit status: 0 when no run reports an error and invariant 1 holds in every
# tree, 1 otherwise (also when a tree cannot be fetched or found).
set -uo pipefail
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROG=tree-check
. "$REPO/scripts/lib.sh"
FETCH=$REPO/scripts/fetch-debian-kernel.sh
TC=(python3 "$REPO/scripts/tree-check/tree_check.py")
CACHE=${ZWM_CACHE:-$HOME/.cache/zero-weak-mcount}

DEFAULT_TREES="sid-amd64 sid-ppc64el trixie-amd64 trixie-ppc64el bookworm-amd64 bookworm-i386 bookworm-ppc64el"
trees=$DEFAULT_TREES
work=
keep=0
jobs=2
while [ $# -gt 0 ]; do
    case "$1" in
        --trees) trees=${2//,/ }; shift 2;;
        --work) work=$2; shift 2;;
        --keep) keep=1; shift;;
        -j) jobs=$2; shift 2;;
        *) arg_error "$1";;
    esac
done

missing_packages "python3 python3" "xz xz-utils"
install_packages "${MISSING[@]}"
ZWM=$(find_tool "${ZWM:-}") || exit 1
work=$(work_dir "$work" /tmp/zwm-trees.XXXXXX) || die "cannot make the work folder"
log "work folder: $work"
declare -a FAILURES=()
ROWS=$work/rows.jsonl
: > "$ROWS"

# tree_root SPEC — print the extraction root of SPEC (fetching SUITE-DEBARCH)
tree_root() {
    local spec=$1 base abi
    case "$spec" in
        *@*)
            base=${spec%@*}; abi=${spec#*@}
            [ -d "$CACHE/debian/$base/$abi/root" ] || return 1
            printf '%s\n' "$CACHE/debian/$base/$abi/root";;
        *-*)
            "$FETCH" "${spec%%-*}" "${spec#*-}";;
        *) return 1;;
    esac
}

for t in $trees; do
    t0=$(date +%s)
    log "=== tree $t"
    root=$(tree_root "$t") || { FAILURES+=("$t: no such tree (fetch failed, or not in $CACHE)"); continue; }
    kver=$(basename "$(dirname "$root")")
    mdir=
    for d in "$root/lib/modules/$kver" "$root/usr/lib/modules/$kver"; do
        [ -d "$d/kernel" ] && mdir=$d
    done
    [ -n "$mdir" ] || { FAILURES+=("$t: no lib/modules/$kver/kernel under $root"); continue; }
    cfg=
    for f in "$root/boot/config-$kver" "$mdir/config"; do
        [ -f "$f" ] && { cfg=$f; break; }
    done
    [ -n "$cfg" ] || { FAILURES+=("$t: no config for $kver under $root"); continue; }
    tdir=$work/${t//@/_}
    mkdir -p "$tdir"
    rm -rf "$tdir/mods"
    n=$(nice -n 5 "${TC[@]}" prep "$mdir/kernel" "$tdir/mods" "$jobs") ||
        { FAILURES+=("$t: preparing the module copies failed"); continue; }
    log "$t: $n modules of $kver copied to $tdir/mods"
    nice -n 5 "$ZWM" --check --format=json -j "$jobs" "$tdir/mods" >"$tdir/default.jsonl" 2>"$tdir/default.log"
    drc=$?
    nice -n 5 "$ZWM" --check --format=json -j "$jobs" --kconfig "$cfg" "$tdir/mods" \
        >"$tdir/kconfig.jsonl" 2>"$tdir/kconfig.log"
    krc=$?
    # --check exits 1 when a file would change, 2 on an error; the reports say which.
    sum=$("${TC[@]}" analyse "$tdir/default.jsonl" "$tdir/kconfig.jsonl" "$tdir/mods" "$tdir/analysis.json") ||
        { FAILURES+=("$t: cannot analyse the logs in $tdir"); continue; }
    syms=$(nice -n 5 "${TC[@]}" symbols "$tdir/mods") ||
        { FAILURES+=("$t: counting the \$*/L0* symbols failed"); syms='{}'; }
    [ "$keep" = 1 ] || rm -rf "$tdir/mods"
    secs=$(( $(date +%s) - t0 ))
    python3 - "$t" "$kver" "$drc" "$krc" "$secs" "$sum" "$syms" "$tdir/analysis.json" >>"$ROWS" <<'PYEOF'
import json, sys
t, kver, drc, krc, secs, s, syms, full = sys.argv[1:]
s = json.loads(s); a = json.load(open(full))
print(json.dumps({"tree": t, "kver": kver, "rc": [int(drc), int(krc)], "secs": int(secs),
                  "sum": s, "syms": json.loads(syms),
                  "changed": {"default": a["default_changed_list"], "kconfig": a["kconfig_changed_list"]},
                  "kept": [a["default_kept_for_doubt"], a["kconfig_kept_for_doubt"]],
                  "errors": [a["default_error_modules"], a["kconfig_error_modules"]],
                  "change_without_zero": [a["default_change_without_zero"], a["kconfig_change_without_zero"]],
                  "differ": a["differ"], "rules": [a["default_rules"], a["kconfig_rules"]]}))
PYEOF
    for m in $(python3 -c 'import json,sys; print(" ".join(json.loads(sys.argv[1])["invariant1_violations"]))' "$sum"); do
        FAILURES+=("$t: invariant 1 violated in $m: the default zeroes entries the --kconfig run keeps (see $tdir/analysis.json)")
    done
    errs=$(python3 -c 'import json,sys; s=json.loads(sys.argv[1]); print((s["default"] or {}).get("errors","?"), (s["kconfig"] or {}).get("errors","?"))' "$sum")
    [ "$errs" = "0 0" ] || FAILURES+=("$t: the tool reported errors (default, kconfig): $errs (see $tdir/*.log)")
done

# --- summary -------------------------------------------------------------------
python3 - "$ROWS" <<'PYEOF' | tee "$work/summary.md"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("| tree | kernel | modules | would change (default / kconfig) | entries zeroed (default / kconfig) "
      "| kept for doubt (d / k) | errors (d / k) | default = kconfig | differ | invariant-1 violations "
      "| `$*` / `L0*` symbols | s |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    s = r["sum"]; d, k = s["default"] or {}, s["kconfig"] or {}
    kinds = ", ".join(f"{n} {kind}" for kind, n in s["differ_kinds"]) or "0"
    sy = r["syms"]
    print(f"| {r['tree']} | {r['kver']} | {s['modules_seen']} | {d.get('would_change','?')} / {k.get('would_change','?')} "
          f"| {s['default_entries_zeroed']} / {s['kconfig_entries_zeroed']} | {r['kept'][0]} / {r['kept'][1]} "
          f"| {d.get('errors','?')} / {k.get('errors','?')} | {s['agree']}/{s['modules_seen']} | {kinds} "
          f"| {len(s['invariant1_violations'])} | {sy.get('dollar','?')} / {sy.get('L0','?')} | {r['secs']} |")
print()
for r in rows:
    ch = r["changed"]
    print(f"* {r['tree']}: modules zeroing with --kconfig: " +
          (", ".join(f"{m.split('/')[-1][:-3]} {len(v)}" for m, v in sorted(ch["kconfig"].items())) or "none"))
    if ch["default"] != ch["kconfig"]:
        print(f"  without --kconfig: " +
              (", ".join(f"{m.split('/')[-1][:-3]} {len(v)}" for m, v in sorted(ch["default"].items())) or "none"))
    for x in r["differ"][:8]:
        print(f"  differs: {x['module']}: {x['kind']}; only default {x['only_default']}, "
              f"only kconfig {x['only_kconfig']}; rules [{x['default_rule']}] vs [{x['kconfig_rule']}]")
    if len(r["differ"]) > 8:
        print(f"  ... {len(r['differ']) - 8} more in analysis.json")
    for tag, cw in zip(("default", "kconfig"), r["change_without_zero"]):
        if cw:
            print(f"  {tag}: {len(cw)} modules would change without zeroing: {cw[:5]}")
    print(f"  rules used (default): {r['rules'][0]}")
    print(f"  rules used (kconfig): {r['rules'][1]}")
PYEOF

if [ ${#FAILURES[@]} -gt 0 ]; then
    echo "FAILED:" >&2
    printf '  - %s\n' "${FAILURES[@]}" >&2
    echo "tree-check: FAIL (${#FAILURES[@]} problem(s)); logs in $work" >&2
    exit 1
fi
echo "tree-check: PASS; logs in $work" >&2
exit 0
