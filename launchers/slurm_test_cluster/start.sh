#!/usr/bin/env bash
# Start (or confirm running) a single-node Slurm test cluster for the harness.
#
# Everything lives in a state dir (default /tmp/harness-slurm); no global config
# is written.  Clients and daemons find the config through SLURM_CONF.
#
#   launchers/slurm_test_cluster/start.sh          # idempotent
#   eval "$(launchers/slurm_test_cluster/start.sh --env)"   # only print exports
#
# Daemons: munged, mariadbd (private instance, TCP 127.0.0.1), slurmdbd,
# slurmctld, slurmd.  slurmdbd is needed because submitit reads job states
# exclusively through `sacct` (no squeue fallback), and sacct has no data source
# without accounting_storage/slurmdbd.
#
# Environment knobs (all optional):
#   HARNESS_SLURM_DIR        state dir                     [/tmp/harness-slurm]
#   HARNESS_SLURM_CTLD_PORT  slurmctld port                [6817]
#   HARNESS_SLURM_D_PORT     slurmd port                   [6818]
#   HARNESS_SLURM_DBD_PORT   slurmdbd port                 [6819]
#   HARNESS_SLURM_DB_PORT    private mariadb port          [6820]
#   HARNESS_SLURM_TIMEOUT    seconds to wait for each step [60]
#   HARNESS_SLURM_NODES      nodes, each its own slurmd on this host [1]
#                            (node i > 1 is <host>-node<i>, slurmd port + 10 x (i - 1))
set -euo pipefail
export PATH="$PATH:/usr/sbin:/sbin"

STATE="${HARNESS_SLURM_DIR:-/tmp/harness-slurm}"
CTLD_PORT="${HARNESS_SLURM_CTLD_PORT:-6817}"
SLURMD_PORT="${HARNESS_SLURM_D_PORT:-6818}"
DBD_PORT="${HARNESS_SLURM_DBD_PORT:-6819}"
DB_PORT="${HARNESS_SLURM_DB_PORT:-6820}"
TIMEOUT="${HARNESS_SLURM_TIMEOUT:-60}"
NNODES="${HARNESS_SLURM_NODES:-1}"
CLUSTER=harness
PARTITION=debug
DB_USER=slurm
DB_PASS=slurmtest

ETC="$STATE/etc"
RUN="$STATE/run"
LOG="$STATE/log"
SPOOL="$STATE/spool"
MUNGE_DIR="$STATE/munge"
MUNGE_SOCK="$MUNGE_DIR/munge.socket.2"
DB_DIR="$STATE/mysql"
DB_SOCK="$RUN/mysqld.sock"
export SLURM_CONF="$ETC/slurm.conf"

print_env() {
    echo "export SLURM_CONF=$SLURM_CONF"
    echo "export HARNESS_SLURM_DIR=$STATE"
    echo "export HARNESS_SLURM_PARTITION=$PARTITION"
}

if [[ "${1:-}" == "--env" ]]; then
    print_env
    exit 0
fi

log() { echo "[slurm-test-cluster] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# pid_alive PIDFILE NAME: the pid in PIDFILE is a live process called NAME
pid_alive() {
    local pidfile=$1 name=$2 pid comm
    [[ -s "$pidfile" ]] || return 1
    pid=$(tr -dc '0-9' <"$pidfile")
    [[ -n "$pid" ]] || return 1
    comm=$(cat "/proc/$pid/comm" 2>/dev/null) || return 1
    [[ "$comm" == "$name"* ]]
}

# wait_for DESCRIPTION CMD...: retry CMD until it succeeds or TIMEOUT expires
wait_for() {
    local what=$1; shift
    local deadline=$((SECONDS + TIMEOUT))
    until "$@" >/dev/null 2>&1; do
        if ((SECONDS >= deadline)); then
            die "timed out after ${TIMEOUT}s waiting for $what (logs in $LOG)"
        fi
        sleep 0.5
    done
}

# ---------------------------------------------------------------- packages
need_pkgs=()
command -v slurmctld >/dev/null || need_pkgs+=(slurm-wlm)
command -v munged >/dev/null || need_pkgs+=(munge)
command -v slurmdbd >/dev/null || need_pkgs+=(slurmdbd)
command -v mariadbd >/dev/null || need_pkgs+=(mariadb-server)
if ((${#need_pkgs[@]})); then
    [[ $(id -u) == 0 ]] || die "missing packages ${need_pkgs[*]} and not root"
    log "installing ${need_pkgs[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # Keep the packages' init scripts from starting global daemons (munge,
    # mariadb, slurmctld/slurmd on /etc/slurm) during installation.
    if [[ ! -e /usr/sbin/policy-rc.d ]]; then
        printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
        chmod 755 /usr/sbin/policy-rc.d
        trap 'rm -f /usr/sbin/policy-rc.d' EXIT
    fi
    apt-get install -y --no-install-recommends "${need_pkgs[@]}" >/dev/null 2>&1 || {
        apt-get update -qq
        apt-get install -y --no-install-recommends "${need_pkgs[@]}" >/dev/null
    }
fi

mkdir -p "$ETC" "$RUN" "$LOG" "$SPOOL/ctld" "$SPOOL/d" "$MUNGE_DIR"
chmod 700 "$MUNGE_DIR"

# ---------------------------------------------------------------- config
source "$(dirname "${BASH_SOURCE[0]}")/config.sh"  # slurm.conf, slurmdbd.conf; sets NODES, CHANGED

print_env >"$STATE/env.sh"

# ---------------------------------------------------------------- munged
if [[ ! -s "$MUNGE_DIR/munge.key" ]]; then
    dd if=/dev/urandom of="$MUNGE_DIR/munge.key" bs=1024 count=1 status=none
fi
chmod 400 "$MUNGE_DIR/munge.key"
munge_ok() { munge -n -S "$MUNGE_SOCK" | unmunge -S "$MUNGE_SOCK"; }
if ! pid_alive "$RUN/munged.pid" munged; then
    log "starting munged"
    rm -f "$MUNGE_SOCK" "$MUNGE_SOCK.lock"
    munged --force --num-threads=10 -S "$MUNGE_SOCK" --key-file="$MUNGE_DIR/munge.key" \
        --pid-file="$RUN/munged.pid" --log-file="$LOG/munged.log" \
        --seed-file="$MUNGE_DIR/munged.seed"
fi
wait_for munged munge_ok

# ---------------------------------------------------------------- mariadb
# shellcheck disable=SC2120  # called with args via wait_for
db() { mariadb --no-defaults --socket="$DB_SOCK" -uroot "$@"; }
if [[ ! -d "$DB_DIR/mysql" ]]; then
    log "initialising private mariadb in $DB_DIR"
    rm -rf "$DB_DIR"
    mariadb-install-db --no-defaults --datadir="$DB_DIR" --user=root \
        --auth-root-authentication-method=socket --skip-test-db \
        >"$LOG/mariadb-install.log" 2>&1 || die "mariadb-install-db failed, see $LOG/mariadb-install.log"
fi
if ! pid_alive "$RUN/mariadbd.pid" mariadbd; then
    log "starting mariadbd on 127.0.0.1:$DB_PORT"
    rm -f "$DB_SOCK"
    setsid mariadbd --no-defaults --user=root --datadir="$DB_DIR" \
        --socket="$DB_SOCK" --port="$DB_PORT" --bind-address=127.0.0.1 \
        --pid-file="$RUN/mariadbd.pid" --log-error="$LOG/mariadbd.log" \
        --innodb-use-native-aio=0 --innodb-buffer-pool-size=128M \
        --innodb-log-file-size=64M --innodb-lock-wait-timeout=900 \
        --skip-name-resolve </dev/null >/dev/null 2>&1 &
fi
wait_for mariadbd db -e "SELECT 1"
db <<EOF
CREATE DATABASE IF NOT EXISTS slurm_acct_db;
CREATE USER IF NOT EXISTS '$DB_USER'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
CREATE USER IF NOT EXISTS '$DB_USER'@'localhost' IDENTIFIED BY '$DB_PASS';
GRANT ALL ON slurm_acct_db.* TO '$DB_USER'@'127.0.0.1';
GRANT ALL ON slurm_acct_db.* TO '$DB_USER'@'localhost';
EOF

# ---------------------------------------------------------------- slurmdbd
if pid_alive "$RUN/slurmdbd.pid" slurmdbd && [[ " ${CHANGED[*]} " == *" slurmdbd.conf "* ]]; then
    log "slurmdbd.conf changed: restarting slurmdbd"
    kill -TERM "$(cat "$RUN/slurmdbd.pid")"
    for ((i = 0; i < 40; i++)); do pid_alive "$RUN/slurmdbd.pid" slurmdbd || break; sleep 0.5; done
fi
if ! pid_alive "$RUN/slurmdbd.pid" slurmdbd; then
    log "starting slurmdbd"
    slurmdbd
fi
wait_for slurmdbd sacctmgr -n list cluster
if ! sacctmgr -n -P list cluster format=cluster | grep -qx "$CLUSTER"; then
    sacctmgr -i add cluster "$CLUSTER" >/dev/null
fi

# ---------------------------------------------------------------- slurmctld
if ! pid_alive "$RUN/slurmctld.pid" slurmctld; then
    log "starting slurmctld"
    slurmctld -f "$SLURM_CONF"
elif [[ " ${CHANGED[*]} " == *" slurm.conf "* ]]; then
    log "slurm.conf changed: scontrol reconfigure"
    scontrol reconfigure
fi
ctld_up() { scontrol ping | grep -q "is UP"; }
wait_for slurmctld ctld_up

# ---------------------------------------------------------------- slurmd
for node in "${NODES[@]}"; do
    if ((NNODES > 1)); then pidfile="$RUN/slurmd-$node.pid"; mkdir -p "$SPOOL/d-$node"; else pidfile="$RUN/slurmd.pid"; fi
    if ! pid_alive "$pidfile" slurmd; then
        log "starting slurmd $node"
        slurmd -f "$SLURM_CONF" -N "$node"
    fi
done
node_idle() {
    local st
    st=$(sinfo -h -N -n "$1" -o %T)
    [[ "$st" == idle* || "$st" == mixed* || "$st" == allocated* ]]
}
for node in "${NODES[@]}"; do wait_for "node $node to become idle" node_idle "$node"; done

log "cluster '$CLUSTER' up: nodes $NODE_LIST ($CPUS cpus, ${REALMEM} MB each), partitions $PARTITION (default), high"
log "use these settings (also in $STATE/env.sh):"
print_env
