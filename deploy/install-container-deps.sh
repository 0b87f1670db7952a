#!/usr/bin/env bash
# Install what the container test (make test-deploy) needs, when missing. Debian/Ubuntu, as root.
#   docker.io    dockerd + containerd + runc: the test starts its own daemon on a private socket
#   debootstrap  builds a local Debian base image when no image registry is reachable
# Safe to re-run: does nothing when everything is present.
set -euo pipefail
need=()
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
command -v containerd >/dev/null 2>&1 || need+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
if [ ${#need[@]} -eq 0 ]; then exit 0; fi
echo "installing system packages: ${need[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "error: need root to apt-get install ${need[*]} (or install them yourself)" >&2; exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# docker.io's own system service is not used: the test starts a private dockerd. Keep the install
# from starting one (no init in containers anyway).
policy=/usr/sbin/policy-rc.d
own_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy" && own_policy=1
fi
trap 'if [ "$own_policy" = 1 ]; then rm -f "$policy"; fi' EXIT
apt-get update -q
apt-get install -y -q --no-install-recommends $(printf '%s\n' "${need[@]}" | sort -u)
