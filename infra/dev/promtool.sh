#!/usr/bin/env bash
# Prints the path of promtool for the alert-rule tests, installing Debian's
# `prometheus` package first when it is missing (as root, or through sudo).
set -euo pipefail

if path=$(command -v promtool 2>/dev/null); then
  echo "$path"
  exit 0
fi
if ! command -v apt-get >/dev/null; then
  echo "promtool.sh: no promtool found and no apt-get to install it" >&2
  exit 1
fi
sudo=""
if [[ $(id -u) -ne 0 ]]; then
  sudo="sudo"
fi
echo "promtool.sh: installing Debian's prometheus package for promtool" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get install -y -q prometheus >&2 || { $sudo apt-get update -q >&2 && $sudo apt-get install -y -q prometheus >&2; }
command -v promtool
