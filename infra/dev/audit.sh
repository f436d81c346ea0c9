#!/usr/bin/env bash
# Prints the folder holding the audit tools (Lighthouse, axe-core, Redocly CLI
# and Spectral, pinned in infra/dev/audit/package-lock.json), installing them
# from npm into .data/tools the first time — and Node.js from Debian when
# there is none.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
"$here/debian-package.sh" nodejs node nodejs >/dev/null
"$here/debian-package.sh" npm npm >/dev/null

# One folder per lock file, so a changed pin installs afresh beside the old.
sum=$(cat "$here/audit/package.json" "$here/audit/package-lock.json" | sha256sum | cut -c1-12)
dir="$root/.data/tools/audit-$sum"
if [[ ! -f "$dir/.installed" ]]; then
  echo "audit.sh: installing Lighthouse, axe-core, Redocly and Spectral from npm into $dir" >&2
  rm -rf "$dir"
  mkdir -p "$dir"
  cp "$here/audit/package.json" "$here/audit/package-lock.json" "$dir/"
  # `npm install` rather than `npm ci`: a Lighthouse dependency asks for
  # "latest" of two packages, which `npm ci` takes for a lock out of sync.
  (cd "$dir" && npm install --no-audit --no-fund --loglevel=error >&2)
  touch "$dir/.installed"
fi
echo "$dir"
