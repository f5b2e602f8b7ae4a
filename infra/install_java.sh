#!/usr/bin/env bash
# Spark 3.5 runs on Java 17: install Debian's headless JDK when `java` is missing.
set -euo pipefail
if command -v java >/dev/null 2>&1; then exit 0; fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq openjdk-17-jre-headless >/dev/null
java -version
