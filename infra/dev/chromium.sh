#!/usr/bin/env bash
# Prints the path of a Chromium for the browser tests, installing Debian's
# `chromium` package first when none is found (as root, or through sudo).
# BOXOFFICE_CHROMIUM, when set, is taken as is.
set -euo pipefail

if [[ -n "${BOXOFFICE_CHROMIUM:-}" ]]; then
  echo "$BOXOFFICE_CHROMIUM"
  exit 0
fi
for name in chromium chromium-browser google-chrome; do
  if path=$(command -v "$name" 2>/dev/null); then
    echo "$path"
    exit 0
  fi
done
if ! command -v apt-get >/dev/null; then
  echo "chromium.sh: no Chromium found and no apt-get to install one; set BOXOFFICE_CHROMIUM" >&2
  exit 1
fi
sudo=""
if [[ $(id -u) -ne 0 ]]; then
  sudo="sudo"
fi
echo "chromium.sh: installing Debian's chromium package for the browser tests" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get install -y -q chromium >&2 || { $sudo apt-get update -q >&2 && $sudo apt-get install -y -q chromium >&2; }
command -v chromium
