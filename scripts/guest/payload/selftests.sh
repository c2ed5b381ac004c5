# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=sh
# Payload (scripts/guest/init sources it): the kernel's own ftrace and
# livepatch selftests, and probes on module functions, for
# scripts/kernel-selftests.sh.  /selftests.conf names the suites to run
# ("preload ftrace livepatch probes", any of them) and PRELOAD, the module
# modprobe loads first so that its records are in play during the suites,
# and FTRACE_TESTS, the ftracetest cases to run (empty: all).
# /lib/modules/$(uname -r) is a modprobe tree (modules.dep from depmod).
#   preload:   "@@ZWM PRELOAD MOD rc=N"
#   ftrace:    ftracetest's KTAP (-K) in a KTAP block named ftrace, then
#              the last lines of the log of each test that did not pass,
#              each in a FTRACELOG block named after the log
#   livepatch: kselftest's runner (run_kselftest.sh -c livepatch) and its
#              KTAP, each test's output a "# " line in it, in a KTAP
#              block named livepatch
#   probes:    for each module form in /probes/FORM/: a kprobe, an fprobe
#              and the function_graph tracer on trace-events-sample's
#              do_simple_thread_func (its kthread calls it every second):
#              "@@ZWM PROBE FORM KIND hits=N"
# shellcheck source=/dev/null # written by scripts/kernel-selftests.sh
. /selftests.conf
# The livepatch tests need debugfs (dynamic debug, kprobes) and a build
# folder to exist; the console gets only emergencies, so that no kernel
# message splits a verdict line (the suites read the kernel log themselves).
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
# bash's process substitution (the livepatch tests' diff <(...)) needs it.
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
# The inter-event histogram tests ping 127.0.0.1, and the tracefs
# ownership and gid= tests take another user and group from /etc/passwd
# and /etc/group: a loopback that is up, and a second user and group.
ip link set lo up 2>/dev/null
[ -f /etc/passwd ] || printf 'root:x:0:0::/:/bin/sh\nnobody:x:65534:65534::/:/bin/sh\n' > /etc/passwd
[ -f /etc/group ] || printf 'root:x:0:\nnogroup:x:65534:\n' > /etc/group
mkdir -p "/lib/modules/$(uname -r)/build"
echo 1 > /proc/sys/kernel/printk
case " $SUITES " in *" preload "*)
    modprobe "$PRELOAD"; echo "@@ZWM PRELOAD $PRELOAD rc=$?";;
esac
case " $SUITES " in *" ftrace "*)
    # The trace remote tests require remotes/test before their own setup
    # would load the module that makes it.
    modprobe remote_test; echo "@@ZWM PRELOAD remote_test rc=$?"
    echo "@@ZWM KTAP-BEGIN ftrace"
    # shellcheck disable=SC2086 # FTRACE_TESTS are words (empty: all tests)
    # FTRACE_TIMEOUT (seconds, optional) bounds it, so that a run that
    # never ends still reports (report.py --weak fails a boot that hit it).
    (cd /selftests/ftrace && ${FTRACE_TIMEOUT:+timeout "$FTRACE_TIMEOUT"} ./ftracetest -K -l /tmp/ftrace-logs $FTRACE_TESTS > /tmp/ftracetest.out 2>&1
     rc=$?; [ $rc != 143 ] || echo "@@ZWM FTRACE-TIMEOUT $FTRACE_TIMEOUT")
    cat /tmp/ftracetest.out
    echo "@@ZWM KTAP-END ftrace"
    # ftracetest keeps the log of every test that did not pass: the end of
    # each says why.
    for l in /tmp/ftrace-logs/*; do
        [ -f "$l" ] || continue
        echo "@@ZWM FTRACELOG-BEGIN ${l##*/}"
        tail -n 40 "$l"
        echo "@@ZWM FTRACELOG-END ${l##*/}"
    done
    echo "@@ZWM TIME ftrace $(cut -d' ' -f1 /proc/uptime)";;
esac
case " $SUITES " in *" livepatch "*)
    echo "@@ZWM KTAP-BEGIN livepatch"
    /selftests/run_kselftest.sh -c livepatch 2>&1
    echo "@@ZWM KTAP-END livepatch"
    echo "@@ZWM TIME livepatch $(cut -d' ' -f1 /proc/uptime)";;
esac
probe() { # FORM KIND: enable what the caller set up, count its hits
    echo > "$T/trace"
    sleep 3
    echo "@@ZWM PROBE $1 $2 hits=$(grep -c "$fn" "$T/trace")"
}
define() { # FORM KIND FILE DEFINITION: add a dynamic event, or say why not
    echo "$4" > "$T/$3" && return 0
    echo "@@ZWM PROBE $1 $2 hits=0"
    echo "probes: '$4' > $3 failed: $(tail -n 2 "$T/error_log" | tr '\n' ' ')"
    return 1
}
case " $SUITES " in *" probes "*)
    for d in /probes/*/; do
        [ -d "$d" ] || continue
        f=${d%/}; f=${f##*/}
        insmod "$d/trace-events-sample.ko" || { echo "@@ZWM PROBE $f insmod hits=0"; continue; }
        # The event-sample kthread calls simple_thread_func every second,
        # which gcc inlines; what stays a function is the one it calls,
        # do_simple_thread_func, maybe with a suffix (.constprop.0): take
        # the name ftrace lists.
        fn=$(grep -o '^do_simple_thread_func[^ ]*' "$T/available_filter_functions" | head -n 1)
        fn=${fn:-do_simple_thread_func}
        echo > "$T/error_log"
        if define "$f" kprobe kprobe_events "p:zwm/kp trace_events_sample:$fn"; then
            echo 1 > "$T/events/zwm/kp/enable"
            probe "$f" kprobe
            echo 0 > "$T/events/zwm/kp/enable"
            echo > "$T/kprobe_events"
        fi
        if define "$f" fprobe dynamic_events "f:zwm/fp $fn"; then
            echo 1 > "$T/events/zwm/fp/enable"
            probe "$f" fprobe
            echo 0 > "$T/events/zwm/fp/enable"
            echo > "$T/dynamic_events"
        fi
        echo ':mod:trace_events_sample' > "$T/set_ftrace_filter"
        echo function_graph > "$T/current_tracer"
        probe "$f" function_graph
        echo nop > "$T/current_tracer"
        echo > "$T/set_ftrace_filter"
        rmmod trace_events_sample
        echo "@@ZWM RMMOD trace_events_sample-$f rc=$?"
    done;;
esac
