#!/usr/bin/env bash
# Prints the path of promtool for the alert-rule tests, installing Debian's
# `prometheus` package (which also gives `make observe` its Prometheus) when
# it is missing.
set -euo pipefail

exec "$(dirname "$0")/debian-package.sh" prometheus promtool
