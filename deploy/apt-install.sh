#!/usr/bin/env bash
# apt-get install the packages named as arguments, as root, without starting their system services
# (our code starts private servers on free ports; there is no init in containers anyway).
# Called by install-system-deps.sh and install-container-deps.sh with what they found missing.
set -euo pipefail
[ $# -gt 0 ] || exit 0
echo "installing system packages: $*"
if [ "$(id -u)" -ne 0 ]; then
  echo "error: need root to apt-get install $* (or install them yourself)" >&2; exit 1
fi
export DEBIAN_FRONTEND=noninteractive
policy=/usr/sbin/policy-rc.d
own_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy" && own_policy=1
fi
trap 'if [ "$own_policy" = 1 ]; then rm -f "$policy"; fi' EXIT
apt-get update -q
apt-get install -y -q --no-install-recommends $(printf '%s\n' "$@" | sort -u)
