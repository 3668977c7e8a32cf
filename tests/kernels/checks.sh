#!/bin/sh
# The checks run on every kernel the suite boots (tests/integration/test_kernels.py):
# inside a qemu guest as its init's work, with busybox, or on the host as they are.
# They start offcpud, run workloads whose blocking is known, and write what offcpuctl
# says of them to $OUT, each part after a line "=== NAME"; the test reads it back and
# judges. POSIX sh: busybox's ash runs it in the guest.
#
#   checks.sh OFFCPUD OFFCPUCTL WORKLOADS_DIR WORK_DIR OUT
set -u
offcpud=$1 offcpuctl=$2 workloads=$3 work=$4 out=$5
sock=$work/offcpud.sock

part() { printf '=== %s\n' "$1" >>"$out"; }
ctl() { "$offcpuctl" --socket "$sock" "$@" >>"$out" 2>&1; }

mkdir -p "$work/state"
: >"$out"
cat >"$work/offcpud.conf" <<CONF
interval = 200ms
wakers = yes
CONF
part uname
uname -r >>"$out"

"$offcpud" --socket "$sock" --state-directory "$work/state" --config "$work/offcpud.conf" \
    >"$work/offcpud.log" 2>&1 &
daemon=$!
# the verifier is slow under emulation: give it time
i=0
while [ ! -S "$sock" ] && [ $i -lt 600 ] && kill -0 $daemon 2>/dev/null; do
    sleep 0.2
    i=$((i + 1))
done
part ready
[ -S "$sock" ] && echo yes >>"$out"

# a copy of a stock program that no process ran before: its rows come at exec
cp /usr/bin/sleep "$work/csleep"
"$work/csleep" 1.2 &
csleep=$!
wait $csleep
part csleep_pid
echo $csleep >>"$out"

# bash, reading a pipe that stays silent with a timeout: 40 waits of 50 ms in select
mkfifo "$work/silent"
/usr/bin/bash -c 'for ((i = 0; i < 40; i++)); do read -r -t 0.05 line; done' <>"$work/silent" &
bash=$!
wait $bash
part bash_pid
echo $bash >>"$out"

part truth
"$workloads/sleep_and_pipe" --sleeps 50 --writes 30 >>"$out"

# a thread sleeping 10 ms at a time on a CPU that spinners keep busy: after
# each wakeup it waits for the CPU (run-queue time, which the kernel keeps)
part runq_truth
"$workloads/runq_sleeper" --sleeps 30 >>"$out"

# a parent that dlopens a library (a copy: rows no process had) just before it forks 4
# children, which sleep in it: the mmap is seen (status code_mapped_at), so the naming
# side reads the parent again once and each child takes that
cp "$workloads/libblock_at_once.so" "$work/libforked.so"
part mapped_before
ctl status --json
part mapped_truth
"$workloads/fork_children" 4 "$work/libforked.so" | tail -n 1 >>"$out"

sleep 1 # drained: the interval is 200 ms
part mapped_after
ctl status --json
part mapped
ctl dump --comm fork_children --group-by pid --format json
part csleep
ctl dump --pid $csleep --format json --frame-detail
part bash
ctl dump --pid $bash --format json --frame-detail
part sleep_and_pipe
ctl dump --comm sleep_and_pipe --group-by tid --format json
part runq
ctl dump --comm runq_sleeper --group-by tid --format json
part wakers
ctl --json wakers --comm sleep_and_pipe --group-by tid
part status
ctl status --json
part log
cat "$work/offcpud.log" >>"$out"
kill $daemon
wait $daemon
part end
