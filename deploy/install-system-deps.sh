#!/usr/bin/env bash
# Install the distribution packages the embedded services need, when missing.
# Debian/Ubuntu (apt-get). Run as root (CI and the dev machines are root).
#   mariadb-server   /usr/sbin/mariadbd + mariadb-install-db (cdc.dev.mariadb)
#   postgresql       /usr/lib/postgresql/*/bin/{initdb,postgres} (cdc.dev.postgres)
#   openjdk-17       java for Spark (pyspark)
#   prometheus       prometheus + promtool (rules tests, deploy/)
#   python3-venv     `python3 -m venv` for the project's .venv
#   openssl          the command line that makes the TLS tests' certificates (tests/fixtures/tls.py)
#   chromium         headless browser of the status-page test (tests/integration/test_status_page_browser.py)
#   valgrind         instruction counts of `cdc bench mysql --instructions` (cdc/bench/instructions.py)
# Safe to re-run: does nothing when everything is present.
set -euo pipefail
need=()
[ -x /usr/sbin/mariadbd ] || command -v mariadbd >/dev/null 2>&1 || need+=(mariadb-server mariadb-client)
command -v mariadb-install-db >/dev/null 2>&1 || need+=(mariadb-server)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
getent passwd postgres >/dev/null 2>&1 || need+=(postgresql)
command -v java >/dev/null 2>&1 || need+=(openjdk-17-jre-headless)
command -v prometheus >/dev/null 2>&1 || need+=(prometheus)
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v valgrind >/dev/null 2>&1 || need+=(valgrind)
command -v python3 >/dev/null 2>&1 || need+=(python3)
py=python3; [ -x /usr/bin/python3 ] && py=/usr/bin/python3  # the Makefile builds .venv on this one
"$py" -c 'import venv, ensurepip' >/dev/null 2>&1 || need+=(python3-venv)
if [ ${#need[@]} -eq 0 ]; then exit 0; fi
exec bash "$(dirname "$0")/apt-install.sh" "${need[@]}"
