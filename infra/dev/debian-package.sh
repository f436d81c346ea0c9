#!/usr/bin/env bash
# debian-package.sh PACKAGE COMMAND... — prints the path of the first
# COMMAND found, installing Debian's PACKAGE first when none is (as root, or
# through sudo). The test and benchmark bootstraps use it for the tools they
# need (chromium, promtool).
set -euo pipefail

package=$1
shift
for name in "$@"; do
  if path=$(command -v "$name" 2>/dev/null); then
    echo "$path"
    exit 0
  fi
done
if ! command -v apt-get >/dev/null; then
  echo "debian-package.sh: none of $* found and no apt-get to install $package" >&2
  exit 1
fi
sudo=""
if [[ $(id -u) -ne 0 ]]; then
  sudo="sudo"
fi
echo "debian-package.sh: installing Debian's $package package" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get install -y -q "$package" >&2 || { $sudo apt-get update -q >&2 && $sudo apt-get install -y -q "$package" >&2; }
command -v "$1"
