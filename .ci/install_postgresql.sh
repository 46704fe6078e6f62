#!/usr/bin/env bash
# Debian's PostgreSQL server for the tracking-server test against a real database
# (tests/tracking/test_tracking_postgres.py: its fixture runs initdb in a temporary folder, starts the server
# on a free loopback port and stops it). Installed when missing; needs root and the apt mirror.
set -euo pipefail

if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    echo "install_postgresql: $(ls /usr/lib/postgresql/*/bin/postgres | head -1) is already installed"
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "install_postgresql: run as root (apt-get install -y --no-install-recommends postgresql)" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends postgresql >/dev/null
echo "install_postgresql: installed $(ls /usr/lib/postgresql/*/bin/postgres | head -1)"
