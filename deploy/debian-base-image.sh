#!/usr/bin/env bash
# Build a Debian base image with Python for deploy/Dockerfile from Debian's packages, for build hosts
# that cannot pull python:3.11-slim-bookworm (no image registry reachable). Needs root, debootstrap
# and a Docker daemon (DOCKER_HOST is honoured).
#   deploy/debian-base-image.sh [TAG]        default TAG: cdc-base:<release>
# The base holds what the official slim Python image gives the Dockerfile: Python 3 as `python`
# with venv, pip (through venv) and the headers (the optional C extensions build against them).
# The root filesystem is cached as a tar file under $CDC_DEPLOY_CACHE (default ~/.cache/cdc-deploy),
# keyed by the Debian release and this script's package list; delete the file to rebuild it.
# Environment: DEBIAN_RELEASE (default: this host's, from /etc/os-release, else bookworm),
#              DEBIAN_MIRROR (default http://deb.debian.org/debian).
set -euo pipefail
release=${DEBIAN_RELEASE:-$( (. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}") || true)}
release=${release:-bookworm}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
tag=${1:-cdc-base:$release}
packages=python3,python3-venv,python3-dev,python-is-python3,ca-certificates
cache=${CDC_DEPLOY_CACHE:-$HOME/.cache/cdc-deploy}
key=$(printf '%s %s' "$release" "$packages" | sha256sum | cut -c1-12)
rootfs_tar=$cache/debian-$release-python-$key.tar
command -v debootstrap >/dev/null 2>&1 || { echo "error: debootstrap not found: run deploy/install-container-deps.sh" >&2; exit 1; }
if [ ! -s "$rootfs_tar" ]; then
  [ "$(id -u)" -eq 0 ] || { echo "error: debootstrap needs root" >&2; exit 1; }
  mkdir -p "$cache"
  work=$(mktemp -d "$cache/rootfs.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  echo "debootstrap $release from $mirror (cached in $rootfs_tar)"
  debootstrap --variant=minbase --include="$packages" "$release" "$work/root" "$mirror" >"$work/log" 2>&1 \
    || { tail -20 "$work/log" >&2; echo "error: debootstrap $release failed (full log above)" >&2; exit 1; }
  # what the image does not need: the package cache and lists (apt-get update fetches them again)
  rm -rf "$work/root"/var/cache/apt/archives/*.deb "$work/root"/var/lib/apt/lists/* "$work/root"/var/log/*.log
  tar -C "$work/root" --numeric-owner -cf "$work/rootfs.tar" .
  mv "$work/rootfs.tar" "$rootfs_tar"
fi
docker import --change 'ENV LANG=C.UTF-8' --change 'CMD ["python"]' "$rootfs_tar" "$tag" >/dev/null
echo "$tag"
