#!/bin/sh
# Agents placed by Slurm: a one-node cluster this test starts (munged,
# slurmctld and slurmd in the foreground, a slurm.conf made here, on two
# ports no process listens on), and a workflow whose agents run with srun
# and its resource options.
#
#   - each agent is a job step of its own job, named after the agent;
#     corral ps shows the node and the job, the audit log records them
#   - a request goes to an agent and its reply comes back
#   - kill -9 of corral: srun dies, Slurm would let the jobs run on, but
#     corral host hears no keepalive and ends them: no agent is left, and
#     no job step
# SKIPPED, with the reason, under the sanitizers, or where the packages
# are missing or the cluster does not start.
. "$(dirname "$0")/remote-lib.sh"
# Under the sanitizers corral's side (launch, corral host) is the same as
# through ssh, which remote-ssh, remote-ssh-fail and remote-host cover:
# this pass spares the check the time of Slurm's.
[ "${CORRAL_SANITIZE:-}" = ON ] &&
    skip "Slurm runs in the normal pass; corral's launch and corral host run under the sanitizers in remote-ssh, remote-ssh-fail, remote-host"

for c in munged mungekey slurmctld slurmd srun squeue ss timeout; do
	command -v "$c" >/dev/null 2>&1 ||
	    skip "$c is missing (Debian: munge, slurmctld, slurmd, slurm-client)"
done
# Two free ports, from this test's pid.
port=$((20000 + ($$ % 20000) * 2))
while ss -ltnH "sport = :$port or sport = :$((port + 1))" | grep -q .; do
	port=$((port + 2))
	[ $port -lt 62000 ] || skip "no two free ports for Slurm"
done
in_slurm() {
	"$@"
}
# Slurm's step daemons name no file of the test; their environment does.
env_pids() {
	for _p in /proc/[0-9]*; do
		grep -qsF "$T" "$_p/environ" 2>/dev/null && echo "${_p#/proc/}"
	done
}
trap 'for p in $(env_pids); do kill -9 "$p" 2>/dev/null; done; net_cleanup;
    cleanup' EXIT
chmod 755 "$T"
mkdir -p "$T/state" "$T/spool"
mungekey --create --keyfile="$T/munge.key" 2>"$T/mungekey.err" ||
    skip "mungekey cannot make a key: $(cat "$T/mungekey.err")"
munged -F -f --socket="$T/munge.sock" --key-file="$T/munge.key" \
    --log-file="$T/munged.log" --pid-file="$T/munged.pid" \
    --seed-file="$T/munged.seed" >"$T/munged.out" 2>&1 &
wait_for '[ -S "$T/munge.sock" ]' 10 ||
    skip "munged does not start: $(cat "$T/munged.out" "$T/munged.log" 2>/dev/null | tail -n 3)"
cat >"$T/slurm.conf" <<EOF
ClusterName=corraltest
SlurmctldHost=$(hostname)(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$T/munge.sock
CredType=cred/munge
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
MailProg=/bin/true
InactiveLimit=5
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd.log
NodeName=$(hostname) NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
SLURM_CONF="$T/slurm.conf"
export SLURM_CONF
slurmctld -D -f "$SLURM_CONF" \
    >"$T/slurmctld.out" 2>&1 &
ctld=$!
slurmd -D -f "$SLURM_CONF" \
    >"$T/slurmd.out" 2>&1 &
slurmd=$!
# Each try is bounded: srun waits for a controller that is not there yet.
wait_for '! pid_alive $ctld || ! pid_alive $slurmd ||
    in_slurm timeout 10 srun -N1 -n1 -t 1 true >/dev/null 2>&1' 20
pid_alive $ctld && pid_alive $slurmd &&
    in_slurm timeout 10 srun -N1 -n1 -t 1 true >/dev/null 2>&1 ||
    skip "the one-node Slurm cluster does not run jobs: $(tail -n 2 "$T/slurmctld.out" "$T/slurmd.out" 2>/dev/null | grep -v '^$')"

cat >"$T/wf.yaml" <<EOF
env_allow: [SLURM_CONF]
defaults:
  launch:
    argv: [srun, --unbuffered, --quiet, --nodes=1, --ntasks=1,
      --cpus-per-task=1, --mem=16M, --partition=test, --time=10,
      "--job-name={{agent.id}}", "{{cmd}}"]
    corral: "$CORRAL"
    alive: $(awk -v s="$SLOW" 'BEGIN { print s / 2 }')s
    lost: $((3 * SLOW))s
  stop: {grace: 1s, timeout: 1s}
agents:
  worker:
    cmd: [$TR, --record, $REC]
    instances: 2
routes:
  "*": worker
EOF
SOCK="$T/ctl.sock"
: >"$OUT"
: >"$ERR"
mkfifo "$T/stdin" || fail "mkfifo"
exec 8<>"$T/stdin"
"$CORRAL" -v serve "$T/wf.yaml" --log "$LOG" --control "$SOCK" \
    <"$T/stdin" >"$OUT" 2>"$ERR" 8>&- &
CORRAL_PID=$!

# tree agents (argv[0] $TR) running anywhere
agents() {
	ps -ww -eo args= | awk -v tr="$TR" '$1 == tr' | grep -c . || true
}
wait_for '[ "$(agents)" -eq 2 ]' 30 || fail "two agents should run under srun"
# Each worker says where it runs in its own time: wait for both.
for w in worker.1 worker.2; do
	wait_for "log_has \"agent $w: running on\"" 20 || fail "$w never said where it runs"
done
in_slurm squeue -h -o '%j %T' >"$T/squeue" 2>&1
grep -q "^worker.1 RUNNING$" "$T/squeue" && grep -q "^worker.2 RUNNING$" "$T/squeue" ||
    fail "squeue should show both agents' jobs: $(cat "$T/squeue")"
"$CORRAL" ps -S "$SOCK" >"$T/ps.out" 2>&1
grep -q "^  worker.1  .* $(hostname):job=[0-9][0-9]*  *$" "$T/ps.out" ||
    fail "corral ps should show worker.1's node and job: $(cat "$T/ps.out")"
# The audit log's writer thread may lag the stderr line: wait for it.
wait_for "jq -s -e 'any(.[]; .ev == \"host\" and .agent == \"worker.1\" and
    (.slurm_job | test(\"^[0-9]+\$\")))' \"\$LOG\" >/dev/null 2>&1" 20 ||
    fail "the audit log should record worker.1's job: $(grep '"ev":"host"' "$LOG")"

envelope r1 plan >&8
wait_lines 1 20
grep -q '"text":"worker.[12]"' "$OUT" || fail "no reply from a worker: $(cat "$OUT")"

# kill -9 of corral: Slurm keeps a job whose srun died; corral host ends it.
kill -9 "$CORRAL_PID"
wait "$CORRAL_PID" 2>/dev/null
CORRAL_PID=
wait_for '[ "$(agents)" -eq 0 ]' $((3 * SLOW + 10)) ||
    fail "agents left running after kill -9 of corral: $(ps -ww -eo pid,args | grep "$TR")"
wait_for '[ -z "$(squeue -h -s 2>/dev/null)" ]' 30 ||
    fail "job steps left after kill -9 of corral: $(squeue -s)"
# The allocations srun made are Slurm's to end (InactiveLimit, checked
# every half minute or so): nothing of the agents runs in them any more.
