# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=sh
# Payload (scripts/guest/init sources it): what ftrace made of the modules
# that /init loaded, for scripts/e2e.sh.  Prints, between @@ZWM markers:
#   - each module's lines of available_filter_functions_addrs (ip, name,
#     " [mod]"), or of available_filter_functions on kernels before 6.5,
#     and the load address of each of its sections, so that every record
#     can be placed in the module file;
#   - one ftrace smoke test of all modules at once (":mod:NAME" of each into
#     set_ftrace_filter, current_tracer = function, enabled_functions per
#     module, back to nop);
# then unloads them.
# Each read of these files walks every record of the kernel, which takes
# seconds under TCG: read each once.
echo "@@ZWM TIME loaded $(cut -d' ' -f1 /proc/uptime)"
cat "$T/available_filter_functions_addrs" > /tmp/affa 2>/dev/null
[ -s /tmp/affa ] || cat "$T/available_filter_functions" > /tmp/aff
echo "@@ZWM TIME listed $(cut -d' ' -f1 /proc/uptime)"
# Where the kernel lists the ips (6.5 on), those lines carry the names too:
# print only them, for slow consoles (s390x's SCLP under a loaded host).
# shellcheck disable=SC2013 # module names, one a line: words
for m in $(cat /modules/order); do
    if [ -s /tmp/affa ]; then
        echo "@@ZWM ADDRS-BEGIN $m"
        grep " \[$m\]\$" /tmp/affa
        echo "@@ZWM ADDRS-END $m"
    else
        echo "@@ZWM AFF-BEGIN $m"
        grep " \[$m\]\$" /tmp/aff
        echo "@@ZWM AFF-END $m"
    fi
    echo "@@ZWM SECTIONS-BEGIN $m"
    for s in /sys/module/"$m"/sections/.* /sys/module/"$m"/sections/*; do
        [ -f "$s" ] && echo "${s##*/} $(cat "$s")"
    done
    echo "@@ZWM SECTIONS-END $m"
done
# One smoke test for all loaded modules: every pass over the records (the
# filter, the tracer switch) takes seconds under TCG.
echo > "$T/set_ftrace_filter"
werr=""
for m in $LOADED; do
    echo ":mod:$m" >> "$T/set_ftrace_filter" || werr="$werr $m"
done
if [ -n "$LOADED" ] && echo function > "$T/current_tracer"; then
    cur=$(cat "$T/current_tracer")
    cp "$T/enabled_functions" /tmp/enabled
    sleep 1
    echo nop > "$T/current_tracer"
    # shellcheck disable=SC2320 # the status of that write is what is tested
    rc1=$?
else
    cur=none rc1=1
    cp /dev/null /tmp/enabled
fi
cur2=$(cat "$T/current_tracer")
cp "$T/set_ftrace_filter" /tmp/filtered
echo > "$T/set_ftrace_filter"
# shellcheck disable=SC2013 # module names, one a line: words
for m in $(cat /modules/order); do
    case " $LOADED " in *" $m "*) ;; *) continue;; esac
    n=$(grep -c " \[$m\]\$" /tmp/filtered)
    e=$(grep -c " \[$m\]" /tmp/enabled)
    case " $werr " in *" $m "*) echo "@@ZWM SMOKE $m fail set_ftrace_filter-write"; continue;; esac
    if [ "$cur" = function ] && [ $rc1 -eq 0 ] && [ "$cur2" = nop ] && [ "$n" -gt 0 ] && [ "$e" = "$n" ]; then
        echo "@@ZWM SMOKE $m ok filtered=$n enabled=$e"
    else
        echo "@@ZWM SMOKE $m fail filtered=$n enabled=$e tracer=$cur/$cur2 nop-rc=$rc1"
    fi
done
echo "@@ZWM TIME smoked $(cut -d' ' -f1 /proc/uptime)"
for m in $LOADED; do
    rmmod "$m"
    echo "@@ZWM RMMOD $m rc=$?"
done
