#!/usr/bin/env bash
# Headless Chromium for the browser tests (tests/browser, marker `browser`): installed from Debian's
# archive when missing. Needs root (CI runs as root) and access to the apt mirror.
#   bash .ci/install_chromium.sh && HARNESS_BROWSER_TESTS=1 python -m pytest tests/browser
set -euo pipefail

for candidate in chromium chromium-browser google-chrome; do
    if command -v "$candidate" >/dev/null 2>&1; then
        echo "install_chromium: $(command -v "$candidate") is already installed: $("$candidate" --version 2>/dev/null || true)"
        exit 0
    fi
done

if [ "$(id -u)" -ne 0 ]; then
    echo "install_chromium: run as root (apt-get install -y --no-install-recommends chromium)" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
echo "install_chromium: installed $(chromium --version)"
