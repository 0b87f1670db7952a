#!/usr/bin/env bash
# Install the distribution packages the embedded services need, when missing.
# Debian/Ubuntu (apt-get). Run as root (CI and the dev machines are root).
set -euo pipefail
need=()
command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ] || need+=(mariadb-server mariadb-client)
command -v mariadb-install-db >/dev/null 2>&1 || need+=(mariadb-server)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
command -v java >/dev/null 2>&1 || need+=(openjdk-17-jre-headless)
command -v prometheus >/dev/null 2>&1 || need+=(prometheus)
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
if [ ${#need[@]} -eq 0 ]; then exit 0; fi
echo "installing system packages: ${need[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "error: need root to apt-get install ${need[*]}" >&2; exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends $(printf '%s\n' "${need[@]}" | sort -u)
