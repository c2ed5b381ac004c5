# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=sh
# Payload (scripts/guest/init sources it) of scripts/e2e/zwm_e2e.py and
# scripts/adjust-first-demo.sh: what ftrace made of the modules /init
# loaded.  Prints, between @@ZWM markers, each module's lines of
# available_filter_functions_addrs (ip, name, " [mod]"; ADDRS), or of
# available_filter_functions before 6.5 (AFF), and the load address of each
# of its sections, so that every record can be placed in the module file;
# then one ftrace smoke test of all modules (":mod:NAME" of each into
# set_ftrace_filter, current_tracer = function, enabled_functions per
# module, back to nop); then unloads them.  Each read of these files walks
# every record of the kernel, seconds under TCG: each is read once, and
# only one list is printed (s390x's SCLP console is slow on a busy host).
tag=ADDRS
cat "$T/available_filter_functions_addrs" > /tmp/aff 2>/dev/null
[ -s /tmp/aff ] || { tag=AFF; cat "$T/available_filter_functions" > /tmp/aff; }
# shellcheck disable=SC2013 # module names, one a line: words
for m in $(cat /modules/order); do
    echo "@@ZWM $tag-BEGIN $m"
    grep " \[$m\]\$" /tmp/aff
    echo "@@ZWM $tag-END $m"
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
for m in $LOADED; do
    rmmod "$m"
    echo "@@ZWM RMMOD $m rc=$?"
done
