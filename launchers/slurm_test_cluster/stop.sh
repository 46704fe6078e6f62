#!/usr/bin/env bash
# Stop the single-node Slurm test cluster started by start.sh.
#
#   launchers/slurm_test_cluster/stop.sh           # stop daemons, keep state (db, logs)
#   launchers/slurm_test_cluster/stop.sh --purge   # ... and delete the state dir
#
# Idempotent: daemons that are not running are skipped.  Daemons are stopped
# by the PIDs in their PID files only; leftover job step daemons (slurmstepd)
# are recognised by the SLURM_CONF of this cluster in their environment.
set -uo pipefail

STATE="${HARNESS_SLURM_DIR:-/tmp/harness-slurm}"
RUN="$STATE/run"
export SLURM_CONF="$STATE/etc/slurm.conf"
PURGE=0
[[ "${1:-}" == "--purge" ]] && PURGE=1

log() { echo "[slurm-test-cluster] $*" >&2; }

pid_of() {  # pid_of PIDFILE NAME -> prints pid if it is a live process called NAME
    local pidfile=$1 name=$2 pid comm
    [[ -s "$pidfile" ]] || return 1
    pid=$(tr -dc '0-9' <"$pidfile")
    [[ -n "$pid" ]] || return 1
    comm=$(cat "/proc/$pid/comm" 2>/dev/null) || return 1
    [[ "$comm" == "$name"* ]] || return 1
    echo "$pid"
}

# stop_pids NAME PID...: SIGTERM, wait up to 20 s, then SIGKILL
stop_pids() {
    local name=$1; shift
    local pids=("$@") p i alive
    ((${#pids[@]})) || return 0
    log "stopping $name (pid ${pids[*]})"
    kill -TERM "${pids[@]}" 2>/dev/null
    for ((i = 0; i < 40; i++)); do
        alive=()
        for p in "${pids[@]}"; do [[ -d /proc/$p ]] && alive+=("$p"); done
        ((${#alive[@]})) || return 0
        sleep 0.5
    done
    log "$name did not exit after SIGTERM, sending SIGKILL to ${alive[*]}"
    kill -KILL "${alive[@]}" 2>/dev/null
    sleep 0.5
}

# stop_daemons NAME:PIDFILE...: stop these daemons together, remove their PID files
stop_daemons() {
    local spec names=() pids=() pid
    for spec in "$@"; do
        if pid=$(pid_of "${spec#*:}" "${spec%%:*}"); then
            names+=("${spec%%:*}")
            pids+=("$pid")
        fi
    done
    ((${#pids[@]})) && stop_pids "${names[*]}" "${pids[@]}"
    for spec in "$@"; do rm -f "${spec#*:}"; done
}

# slurmstepd processes that belong to this cluster (same SLURM_CONF)
our_stepds() {
    local p
    for p in $(pgrep -x slurmstepd 2>/dev/null); do
        tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "SLURM_CONF=$SLURM_CONF" && echo "$p"
    done
}

if [[ -d "$STATE" ]]; then
    # Cancel remaining jobs so no job processes outlive the cluster.
    if pid_of "$RUN/slurmctld.pid" slurmctld >/dev/null; then
        jobs=$(squeue -h -o %i 2>/dev/null | tr '\n' ' ')
        if [[ -n "${jobs// /}" ]]; then
            log "cancelling jobs: $jobs"
            # shellcheck disable=SC2086
            scancel $jobs 2>/dev/null
            for ((i = 0; i < 30; i++)); do
                [[ -z "$(our_stepds)" ]] && break
                sleep 0.5
            done
        fi
    fi
    # order: slurm daemons, then accounting (slurmctld flushes to slurmdbd on
    # shutdown), then the database and munge.
    slurmds=(); for pidfile in "$RUN"/slurmd.pid "$RUN"/slurmd-*.pid; do slurmds+=(slurmd:"$pidfile"); done
    stop_daemons "${slurmds[@]}" slurmctld:"$RUN/slurmctld.pid"
    mapfile -t stepds < <(our_stepds)
    stop_pids slurmstepd "${stepds[@]}"
    stop_daemons slurmdbd:"$RUN/slurmdbd.pid"
    stop_daemons mariadbd:"$RUN/mariadbd.pid" munged:"$RUN/munged.pid"
    rm -f "$RUN/mysqld.sock" "$STATE/munge/munge.socket.2" "$STATE/munge/munge.socket.2.lock"
    if ((PURGE)); then
        log "removing $STATE"
        rm -rf "$STATE"
    fi
fi
log "stopped"
