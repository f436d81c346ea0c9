#!/usr/bin/env bash
# Prints the base URL (without database name) of a PostgreSQL server for
# development and tests, bringing one up when needed:
#   1. DATABASE_URL's server when it is set;
#   2. the machine's server on 127.0.0.1:5432 when it answers;
#   3. otherwise a private cluster under .data/pg on 127.0.0.1:$BOXOFFICE_PG_PORT
#      (default 55432), created with the installed PostgreSQL binaries; when
#      they are missing and we are root, apt-get installs the postgresql package.
# Set BOXOFFICE_PG_PRIVATE=1 to skip step 2.
#
# `postgres.sh bin` instead prints the directory of the server binaries
# (initdb, pg_ctl), installing them the same way when missing: the fault
# tests run clusters of their own.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
port=${BOXOFFICE_PG_PORT:-55432}

log() { echo "postgres.sh: $*" >&2; }

find_bin() {
  local dir
  if command -v initdb >/dev/null 2>&1; then dirname "$(command -v initdb)"; return 0; fi
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    [[ -x "$dir/initdb" ]] && { echo "$dir"; return 0; }
  done
  return 1
}

ensure_bin() {
  local bin
  bin=$(find_bin || true)
  if [[ -z "$bin" ]]; then
    if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
      log "installing PostgreSQL with apt-get"
      DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
      bin=$(find_bin)
    else
      log "no PostgreSQL binaries found; install PostgreSQL or set DATABASE_URL"
      return 1
    fi
  fi
  echo "$bin"
}

if [[ "${1:-}" == "bin" ]]; then
  ensure_bin
  exit 0
fi

if [[ -n "${DATABASE_URL:-}" ]]; then
  # Strip the database name and query: callers add their own.
  base=${DATABASE_URL%%\?*}
  echo "${base%/*}"
  exit 0
fi

answers() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

if [[ -z "${BOXOFFICE_PG_PRIVATE:-}" ]] && answers 5432; then
  echo "postgres://postgres@127.0.0.1:5432"
  exit 0
fi

bin=$(ensure_bin)

data="$root/.data/pg"
sock="$root/.data/pgsock"
# initdb and postgres refuse to run as root: run them as the postgres user.
as_owner() {
  if [[ $(id -u) -eq 0 ]]; then
    id postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql postgres
    chown -R postgres "$root/.data"
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

mkdir -p "$root/.data" "$sock"
chmod 755 "$root/.data"
if [[ ! -f "$data/PG_VERSION" ]]; then
  log "creating a private cluster in $data"
  as_owner "$bin/initdb" -D "$data" -U postgres --auth=trust --encoding=UTF8 >&2
fi
# Ours is running when pg_ctl says so; its port is line 4 of postmaster.pid.
# Whatever else answers on the port is not ours (another checkout's or
# another user's cluster): refuse to use it.
if as_owner "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
  port=$(sed -n 4p "$data/postmaster.pid")
elif answers "$port"; then
  log "127.0.0.1:$port is taken by another server, not this checkout's cluster in $data;"
  log "set BOXOFFICE_PG_PORT to a free port (or DATABASE_URL to a server you mean to use)"
  exit 1
else
  log "starting the private cluster on 127.0.0.1:$port"
  as_owner "$bin/pg_ctl" -D "$data" -l "$root/.data/pg.log" -w -t 60 \
    -o "-p $port -k $sock -c listen_addresses=127.0.0.1 -c max_connections=200" start >&2
fi
echo "postgres://postgres@127.0.0.1:$port"
