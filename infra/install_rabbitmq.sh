#!/usr/bin/env bash
# The RabbitMQ tests run a real broker: install Debian's rabbitmq-server (with Erlang and
# epmd) when missing. Debian's package starts a system broker on install; stop and disable
# it, because the tests start their own on 127.0.0.1 with their own ports and data directory.
set -euo pipefail
if command -v rabbitmq-server >/dev/null 2>&1 || [ -x /usr/lib/rabbitmq/bin/rabbitmq-server ]; then
    exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
# policy-rc.d 101 keeps the package from starting the system broker in a container without init.
POLICY=/usr/sbin/policy-rc.d
CREATED_POLICY=0
if [ ! -e "$POLICY" ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$POLICY" >/dev/null
    $SUDO chmod +x "$POLICY"
    CREATED_POLICY=1
fi
DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
    rabbitmq-server >/dev/null
if [ "$CREATED_POLICY" -eq 1 ]; then $SUDO rm -f "$POLICY"; fi
if command -v systemctl >/dev/null 2>&1 && systemctl is-system-running >/dev/null 2>&1; then
    $SUDO systemctl disable --now rabbitmq-server >/dev/null 2>&1 || true
fi
ls /usr/lib/rabbitmq/bin/rabbitmq-server
