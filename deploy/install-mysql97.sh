#!/usr/bin/env bash
# Provision a private MySQL 9.7 server (Debian sid's mysql-server-core) for the MySQL test tier.
#
# Debian 12 has no MySQL server; sid carries mysql-server-core 9.7 (the MySQL 9.7 LTS). Its
# binary needs a newer libc than the host's, so it is unpacked with the libraries it links into
# one private directory and run through that directory's own dynamic loader (cdc/dev/mysql.py):
# the host's packages, apt sources and apt state are never touched.
#
#   CDC_MYSQL97_ROOT   where the unpacked tree goes (default ~/.cache/cdc-mysql97)
#   CDC_MYSQL97_MIRROR the Debian archive to download from (default http://deb.debian.org/debian)
#
# Safe to re-run: a stamp file in the tree makes a second run do nothing.
set -euo pipefail

root="${CDC_MYSQL97_ROOT:-$HOME/.cache/cdc-mysql97}"
mirror="${CDC_MYSQL97_MIRROR:-http://deb.debian.org/debian}"
stamp="$root/.installed"
[ -f "$stamp" ] && exit 0

# The server, its client and every library mysqld links (`apt-cache depends` of the two cores
# on sid), including the C library and its loader: the host's are too old for the binary.
packages=(mysql-server-core mysql-client-core
  libc6 libstdc++6 libgcc-s1 libaio1t64 libcurl4t64 libfido2-1 libgoogle-perftools4t64 libicu78
  liblz4-1 libmecab2 libnuma1 libprotobuf-lite32t64 libprotobuf32t64 libssl3t64 libtirpc3t64
  libzstd1 zlib1g libtcmalloc-minimal4t64 libunwind8
  libcbor0.10 libnghttp2-14 libnghttp3-9 libngtcp2-16 libngtcp2-crypto-ossl0 libidn2-0 librtmp1
  libssh2-1t64 libpsl5t64 libbrotli1 libgssapi-krb5-2 libldap2 libkrb5-3 libk5crypto3
  libkrb5support0 libcom-err2 libkeyutils1 libsasl2-2 libgnutls30t64 libhogweed6t64 libnettle8t64
  libgmp10 libp11-kit0 libtasn1-6 libunistring5 libffi8 libudev1 libcap2 libedit2 libbsd0
  libmd0 libtinfo6 libncursesw6)

keyring=/usr/share/keyrings/debian-archive-keyring.gpg
if [ ! -r "$keyring" ]; then
  echo "install-mysql97: the Debian archive key $keyring is missing; install debian-archive-keyring" >&2
  exit 1
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/cdc-mysql97-apt.XXXXXX")"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/debs" "$work/etc/preferences.d"
echo "deb [signed-by=$keyring] $mirror sid main" > "$work/etc/sources.list"
: > "$work/status"
apt_opts=(
  -o "Dir::Etc::SourceList=$work/etc/sources.list"
  -o "Dir::Etc::SourceParts=$work/etc/none"
  -o "Dir::Etc::PreferencesParts=$work/etc/preferences.d"
  -o "Dir::State::Lists=$work/lists"
  -o "Dir::State::Status=$work/status"
  -o "Dir::Cache=$work/cache"
  -o "APT::Architecture=amd64"
  -o "Debug::NoLocking=1"
  -o "APT::Sandbox::User=root"
)

echo "install-mysql97: downloading MySQL 9.7 from $mirror (sid) into $root"
if ! apt-get "${apt_opts[@]}" -qq update >"$work/update.log" 2>&1 \
    || grep -qE '^(W|E): (Failed|Some index files failed)' "$work/update.log"; then
  echo "install-mysql97: cannot reach the Debian archive $mirror (sid): $(grep -E '^(E|W):' "$work/update.log" | head -3 | tr '\n' ' ')" >&2
  echo "install-mysql97: check the network or set CDC_MYSQL97_MIRROR to a reachable Debian mirror" >&2
  exit 1
fi
(cd "$work/debs" && apt-get "${apt_opts[@]}" -qq download "${packages[@]}") || {
  echo "install-mysql97: downloading ${packages[*]} from $mirror (sid) failed (see above)" >&2
  exit 1
}

rm -rf "$root.partial"
mkdir -p "$root.partial"
for deb in "$work"/debs/*.deb; do
  dpkg -x "$deb" "$root.partial"
done
# merged-/usr layout of sid: the loader and libraries live in usr/lib; make the paths the
# starter uses exist either way
test -x "$root.partial/usr/sbin/mysqld" || { echo "install-mysql97: no usr/sbin/mysqld in the packages" >&2; exit 1; }
test -e "$root.partial/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" \
  || { echo "install-mysql97: no dynamic loader in the libc6 package" >&2; exit 1; }
"$root.partial/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" \
  --library-path "$root.partial/usr/lib/x86_64-linux-gnu:$root.partial/lib/x86_64-linux-gnu" \
  "$root.partial/usr/sbin/mysqld" --no-defaults --version > "$root.partial/VERSION"
rm -rf "$root"
mv "$root.partial" "$root"
touch "$stamp"
echo "install-mysql97: $(cat "$root/VERSION")"
