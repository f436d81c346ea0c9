#!/usr/bin/env bash
# Brings up a container engine for the deploy test and `make image`:
# Debian's podman with runc, netavark (which needs iptables),
# podman-compose and debootstrap, installed as
# root when missing (as postgres.sh and chromium.sh do). Prints the path of
# a containers.conf (CONTAINERS_CONF) that works in this sandbox: it
# refuses setrlimit, so podman's default ulimits are cleared, and crun
# cannot handle its cgroup layout, so runc is the runtime.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
missing=()
for cmd in podman runc podman-compose debootstrap iptables; do
  command -v "$cmd" >/dev/null 2>&1 || missing+=("$cmd")
done
if ((${#missing[@]})); then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "containers.sh: ${missing[*]} missing, and only root with apt-get installs them" >&2
    exit 1
  fi
  echo "containers.sh: installing podman, runc, podman-compose, debootstrap from Debian" >&2
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    podman runc podman-compose debootstrap iptables uidmap slirp4netns fuse-overlayfs netavark aardvark-dns >&2 ||
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    podman runc podman-compose debootstrap iptables >&2
fi
conf=$root/.data/containers/containers.conf
mkdir -p "$(dirname "$conf")"
cat >"$conf" <<'CONF'
[engine]
runtime = "runc"
[containers]
default_ulimits = []
CONF
echo "$conf"
