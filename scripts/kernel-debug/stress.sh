# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=sh
# Payload (scripts/guest/init sources it) for scripts/kernel-debug.sh: load
# and unload modules over and over on a debug kernel, while a second
# process turns the function tracer on and off and reads
# available_filter_functions, so that the load-time pass races with the
# readers of the records it creates.
#
# /stress/cases: one "CASE MODNAME" line per case, /stress/CASE.ko its
# module; /stress/rounds: how many rounds.  Every round loads and unloads
# each case once; every fourth round also loads the first case and the
# last one at the same time (two insmods in flight; they must be different
# modules).  Marks each round's start with "@@ZWM ROUND N UPTIME BAD", BAD
# the count of kernel log lines so far that look like a splat (the console
# shows only errors, so a run cut short still tells what it logged).
# Reports "@@ZWM STRESS rounds=N loads=N failed=N toggles=N".
rounds=$(cat /stress/rounds)
rm -f /tmp/stress-stop /tmp/stress-toggles
(
    n=0
    while [ ! -e /tmp/stress-stop ]; do
        echo function > "$T/current_tracer"
        cat "$T/available_filter_functions" > /dev/null
        echo nop > "$T/current_tracer"
        n=$((n + 1))
    done
    echo $n > /tmp/stress-toggles
) &
first=$(head -n 1 /stress/cases)
last=$(tail -n 1 /stress/cases)
loads=0 failed=0 r=1
while [ $r -le "$rounds" ]; do
    echo "@@ZWM ROUND $r $(cut -d' ' -f1 /proc/uptime) $(dmesg | grep -c -e WARNING: -e BUG: -e Oops -e 'Call Trace' -e 'ftrace bug')"
    while read -r c mod; do
        insmod "/stress/$c.ko" || failed=$((failed + 1))
        rmmod "$mod" || failed=$((failed + 1))
        loads=$((loads + 1))
    done < /stress/cases
    if [ $((r % 4)) = 0 ]; then
        # shellcheck disable=SC2086 # "CASE MODNAME" twice: four words
        set -- $first $last
        insmod "/stress/$1.ko" & a=$!
        insmod "/stress/$3.ko" & b=$!
        wait $a || failed=$((failed + 1))
        wait $b || failed=$((failed + 1))
        rmmod "$2" || failed=$((failed + 1))
        rmmod "$4" || failed=$((failed + 1))
        loads=$((loads + 2))
    fi
    r=$((r + 1))
done
touch /tmp/stress-stop
wait
echo "@@ZWM STRESS rounds=$rounds loads=$loads failed=$failed toggles=$(cat /tmp/stress-toggles)"
