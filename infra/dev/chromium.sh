#!/usr/bin/env bash
# Prints the path of a Chromium for the browser tests and benchmarks,
# installing Debian's `chromium` package when none is found.
# BOXOFFICE_CHROMIUM, when set, is taken as is.
set -euo pipefail

if [[ -n "${BOXOFFICE_CHROMIUM:-}" ]]; then
  echo "$BOXOFFICE_CHROMIUM"
  exit 0
fi
exec "$(dirname "$0")/debian-package.sh" chromium chromium chromium-browser google-chrome
