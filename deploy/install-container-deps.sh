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
exec bash "$(dirname "$0")/apt-install.sh" "${need[@]}"
