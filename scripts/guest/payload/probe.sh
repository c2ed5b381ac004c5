# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=sh
# Payload (scripts/guest/init sources it) of scripts/probe/probe.py: does a
# probe on a function reach that function?  /probe/module names the module,
# /probe/functions the functions to probe (those that precede a dead weak
# body), /probe/kvmdrive (or whatever /probe/workload names) is the
# workload that calls them.  For the host's replay of the kernel's record
# lookup it prints the module's records (available_filter_functions_addrs),
# its /proc/kallsyms lines and its section addresses.  Then, each with the
# same workload, between @@ZWM markers:
#   CONTROL  the function tracer with set_ftrace_filter = the functions
#            (a name match: it finds each function's own record): hits a
#            function, and the enabled_functions lines while it runs;
#   FPROBE   one fprobe event per function (dynamic_events "f:"): the rc of
#            the definition and of the enable, enabled_functions, hits;
#   FENTRY   one BPF fentry program per function (/probe/fentry), if there;
#   LIVEPATCH /probe/livepatch.ko, if there (see scripts/probe/livepatch.c).
# Each read of enabled_functions walks every record (seconds under TCG).
P=/probe
M=$(cat "$P/module")
FUNCS=$(cat "$P/functions")
WORK="$P/$(cat "$P/workload" 2>/dev/null || echo kvmdrive)"
# Before 6.5 there is no available_filter_functions_addrs: the names alone,
# in record order (the host places them from the module file and the
# section addresses).
echo "@@ZWM RECORDS-BEGIN $M"
if [ -f "$T/available_filter_functions_addrs" ]; then
    grep " \[$M\]\$" "$T/available_filter_functions_addrs"
else
    grep " \[$M\]\$" "$T/available_filter_functions"
fi
echo "@@ZWM RECORDS-END"
echo "@@ZWM KALLSYMS-BEGIN $M"
grep "\[$M\]$" /proc/kallsyms
echo "@@ZWM KALLSYMS-END"
echo "@@ZWM SECTIONS-BEGIN $M"
for s in /sys/module/"$M"/sections/.*text*; do
    [ -f "$s" ] && echo "${s##*/} $(cat "$s")"
done
echo "@@ZWM SECTIONS-END"

# The records of the probed functions' extents, for kpeek: those named
# after one of them (an arch without the kernel's weak check names a dead
# record after the function before it) or invalid (one with it).
SITES=""
if [ -x "$P/kpeek" ] && [ -f "$T/available_filter_functions_addrs" ]; then
    SITES=$(grep " \[$M\]\$" "$T/available_filter_functions_addrs" |
        awk -v fs="$FUNCS" 'BEGIN {n = split(fs, a, " "); for (i = 1; i <= n; i++) w[a[i]] = 1}
            ($2 in w) || ($2 ~ /^__ftrace_invalid_address__/) {print $1}' | tr '\n' ' ')
fi
# stage STAGE, while a stage's probes are on: enabled_functions, the bytes
# at every site (with kpeek: which site ftrace rewrote) and the workload.
# In a file, for the child that scripts/probe/fentry.c runs while its
# programs are attached.
cat > /tmp/stage.sh <<EOT
peek() { [ -z "$SITES" ] || { echo "@@ZWM KPEEK-BEGIN \$1"; $P/kpeek $SITES; echo "@@ZWM KPEEK-END"; }; }
stage() {
    echo "@@ZWM ENABLED-BEGIN \$1"
    grep " \[$M\]" "$T/enabled_functions"
    echo "@@ZWM ENABLED-END"
    peek "\$1"
    echo "@@ZWM WORKLOAD \$1 \$($WORK 2>&1 | tail -n 1)"
    sleep 1
}
EOT
# shellcheck source=/dev/null # written just above
. /tmp/stage.sh
peek baseline

# ev F: F's fprobe event name (a local function's "F.part.0" has dots,
# which an event name cannot).
ev() { echo "$1" | tr . _; }

# count_hits FILE FORMAT: "F N" for each function, N the trace lines of F.
count_hits() {
    for f in $FUNCS; do
        case $2 in
            function) n=$(grep -c " $f <-" "$1");;
            fprobe) n=$(grep -c " $(ev "$f"): (" "$1");;
        esac
        echo "$f $n"
    done
}

# --- control: the function tracer, filtered by name ---------------------------
echo 0 > "$T/tracing_on"
echo > "$T/trace"
echo > "$T/set_ftrace_filter"
rcs=""
for f in $FUNCS; do
    echo "$f" >> "$T/set_ftrace_filter"
    # shellcheck disable=SC2320 # the status of that write is the result
    rcs="$rcs $f=$?"
done
echo "@@ZWM CONTROL-FILTER$rcs"
echo function > "$T/current_tracer"
echo 1 > "$T/tracing_on"
stage control
echo 0 > "$T/tracing_on"
# Before the switch to nop, which empties the buffer.
cat "$T/trace" > /tmp/trace-control
echo nop > "$T/current_tracer"
echo > "$T/set_ftrace_filter"
echo "@@ZWM HITS-BEGIN control"
count_hits /tmp/trace-control function
echo "@@ZWM HITS-END"

# --- fprobe events -------------------------------------------------------------
# Not on every kernel (6.5 added them; Debian's 6.1 has no CONFIG_FPROBE):
# the README of tracefs lists the "f:" syntax where they exist.
if grep -qF 'f[:[<group>/][<event>]] <func-name>' "$T/README"; then
    echo "@@ZWM FPROBE-EVENTS yes"
    echo > "$T/trace"
    defs="" ens=""
    for f in $FUNCS; do
        echo "f:zwm/$(ev "$f") $f" >> "$T/dynamic_events"
        # shellcheck disable=SC2320 # the status of that write is the result
        defs="$defs $f=$?"
    done
    for f in $FUNCS; do
        echo 1 > "$T/events/zwm/$(ev "$f")/enable"
        # shellcheck disable=SC2320 # the status of that write is the result
        ens="$ens $f=$?"
    done
    echo "@@ZWM FPROBE-DEFINE$defs"
    echo "@@ZWM FPROBE-ENABLE$ens"
    echo 1 > "$T/tracing_on"
    stage fprobe
    echo 0 > "$T/tracing_on"
    cat "$T/trace" > /tmp/trace-fprobe
    echo "@@ZWM HITS-BEGIN fprobe"
    count_hits /tmp/trace-fprobe fprobe
    echo "@@ZWM HITS-END"
    for f in $FUNCS; do echo 0 > "$T/events/zwm/$(ev "$f")/enable"; done
    for f in $FUNCS; do echo "-:zwm/$(ev "$f")" >> "$T/dynamic_events"; done
    echo > "$T/trace"
else
    echo "@@ZWM FPROBE-EVENTS no"
fi

# --- BPF fentry ------------------------------------------------------------------
if [ -x "$P/fentry" ]; then
    # shellcheck disable=SC2086 # $FUNCS: the function names, split on purpose
    "$P/fentry" "$M" ". /tmp/stage.sh; stage fentry > /tmp/stage-fentry" $FUNCS > /tmp/fentry-out 2>&1
    cat /tmp/stage-fentry
    echo "@@ZWM FENTRY-BEGIN"
    cat /tmp/fentry-out
    echo "@@ZWM FENTRY-END"
fi

# --- livepatch -------------------------------------------------------------------
if [ -f "$P/livepatch.ko" ]; then
    lf=$(cat "$P/livepatch-function")
    addr=$(awk -v f="$lf" -v m="[$M]" '$3 == f && $4 == m {print $1; exit}' /proc/kallsyms)
    insmod "$P/livepatch.ko" "target=0x$addr"
    echo "@@ZWM LIVEPATCH-INSMOD $lf rc=$? addr=$addr"
    lp=/sys/kernel/livepatch/zwm_probe_livepatch
    i=0
    while [ "$(cat $lp/transition 2>/dev/null)" = 1 ] && [ $i -lt 60 ]; do sleep 1; i=$((i + 1)); done
    echo "@@ZWM LIVEPATCH-STATE enabled=$(cat $lp/enabled 2>/dev/null) transition=$(cat $lp/transition 2>/dev/null)"
    stage livepatch
    echo "@@ZWM LIVEPATCH-RUNS $lf $(cat /sys/module/zwm_probe_livepatch/parameters/runs 2>/dev/null)"
fi
