# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=sh
# Payload (scripts/guest/init sources it): timed loads, for
# scripts/kernel-e2e.sh and scripts/kernel-bench.sh.
#
# /cases has one line per case: "CASE MODNAME LOADS LISTING"; /cases.d/CASE.ko
# is its module.  Case by case, interleaved, each is loaded and unloaded
# LOADS times; each load is bracketed by "zwm-load CASE I start|end" lines in
# the kernel log, which the host times from their printk timestamps.  After
# the first load of a case, with LISTING "full": the module's lines of
# available_filter_functions between "@@ZWM AFF-BEGIN CASE" and
# "@@ZWM AFF-END CASE", and an ftrace smoke test (":mod:MODNAME" into
# set_ftrace_filter, function tracer on and off), which walks and enables
# every record (a stale record that was not disabled would WARN there):
# "@@ZWM SMOKE CASE filtered=N enabled=N".  With LISTING "digest" (large
# modules over a slow console): "@@ZWM AFF CASE lines=N invalid=N
# valid-md5=HASH", the hash of its sorted valid lines.
most=$(awk '$3 > m { m = $3 } END { print m + 0 }' /cases)
i=1
while [ $i -le "$most" ]; do
    while read -r c mod loads listing; do
        [ "$i" -le "$loads" ] || continue
        echo "zwm-load $c $i start" > /dev/kmsg
        insmod "/cases.d/$c.ko"
        rc=$?
        echo "zwm-load $c $i end" > /dev/kmsg
        echo "@@ZWM INSMOD $c $i rc=$rc"
        if [ $i = 1 ] && [ $rc = 0 ] && [ "$listing" = full ]; then
            echo "@@ZWM AFF-BEGIN $c"
            grep " \[$mod\]\$" "$T/available_filter_functions"
            echo "@@ZWM AFF-END $c"
            echo ":mod:$mod" > "$T/set_ftrace_filter"
            n=$(grep -c . "$T/set_ftrace_filter")
            echo function > "$T/current_tracer"
            e=$(grep -c " \[$mod\]" "$T/enabled_functions")
            echo nop > "$T/current_tracer"
            echo > "$T/set_ftrace_filter"
            echo "@@ZWM SMOKE $c filtered=$n enabled=$e"
        elif [ $i = 1 ] && [ $rc = 0 ]; then
            grep " \[$mod\]\$" "$T/available_filter_functions" > /tmp/aff
            n=$(wc -l < /tmp/aff)
            bad=$(grep -c __ftrace_invalid_address___ /tmp/aff)
            h=$(grep -v __ftrace_invalid_address___ /tmp/aff | sort | md5sum | cut -d' ' -f1)
            echo "@@ZWM AFF $c lines=$n invalid=$bad valid-md5=$h"
        fi
        rmmod "$mod"; echo "@@ZWM RMMOD $c $i rc=$?"
    done < /cases
    i=$((i + 1))
done
