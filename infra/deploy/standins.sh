#!/usr/bin/env bash
# Builds local stand-ins for the public images the Dockerfile and
# compose.yaml name, from what this machine can reach — Debian's archive
# and the Go module proxy — for machines with no container registry. It
# prints the variables that name them (GO_IMAGE=… RUNTIME_IMAGE=…
# POSTGRES_IMAGE=… NGINX_IMAGE=… MAILPIT_IMAGE=…), for `podman build
# --build-arg` and podman-compose. Production pulls the real images.
#
# Each stand-in is built once, kept in podman's image store (outside the
# working tree), and built again only when this script's inputs change
# (a label carries their hash). Needs root, podman and debootstrap
# (infra/dev/containers.sh) and CONTAINERS_CONF set as it prints.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
prefix=localhost/boxoffice-standin
stamp=$(cat "$0" "$here"/standins/* | sha256sum | cut -c1-12)
log() { echo "standins: $*" >&2; }

# fresh NAME: whether the image exists and was built by this version.
fresh() {
  [ "$(podman image inspect --format '{{index .Labels "boxoffice.standin"}}' "$1" 2>/dev/null || true)" = "$stamp" ]
}

# build NAME DIR: podman build of DIR's Containerfile, host network (the
# build fetches from Debian's archive or the Go proxy).
build() {
  log "building $1"
  podman build -q --network host --label "boxoffice.standin=$stamp" -t "$1" "$2" >/dev/null
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Debian bookworm, minimal: the base of the others.
debian=$prefix/debian:bookworm
if ! fresh "$debian"; then
  log "debootstrap bookworm (a minute)"
  debootstrap --variant=minbase --include=ca-certificates bookworm "$work/rootfs" http://deb.debian.org/debian >/dev/null
  rm -rf "$work/rootfs/var/cache/apt/archives"/*.deb "$work/rootfs/var/lib/apt/lists"/*
  tar -C "$work/rootfs" -c . | podman import --change "LABEL boxoffice.standin=$stamp" --change 'CMD ["/bin/bash"]' - "$debian" >/dev/null
  rm -rf "$work/rootfs"
fi

# golang:1.26-bookworm: Debian with this machine's Go toolchain.
golang=$prefix/golang:1.26-bookworm
if ! fresh "$golang"; then
  goroot=$(go env GOROOT)
  mkdir -p "$work/golang"
  cp -a "$goroot" "$work/golang/go"
  # This machine's trust store: where the network reaches the module proxy
  # through a TLS-inspecting gateway, its CA is in it.
  cp /etc/ssl/certs/ca-certificates.crt "$work/golang/"
  cat >"$work/golang/Containerfile" <<CF
FROM $debian
COPY go /usr/local/go
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
ENV GOPATH=/go PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
WORKDIR /go
CF
  build "$golang" "$work/golang"
fi

# distroless/static-debian12:nonroot: nothing but CA certificates, time
# zones, a passwd with nonroot (65532) and /tmp.
runtime=$prefix/distroless-static:nonroot
if ! fresh "$runtime"; then
  # One tree copied whole, so /tmp keeps its mode (1777).
  fs=$work/static/fs
  mkdir -p "$fs/etc/ssl/certs" "$fs/tmp" "$fs/home/nonroot" "$fs/usr/share"
  chmod 1777 "$fs/tmp"
  chown 65532:65532 "$fs/home/nonroot"
  cp /etc/ssl/certs/ca-certificates.crt "$fs/etc/ssl/certs/"
  if [ -d /usr/share/zoneinfo ]; then cp -a /usr/share/zoneinfo "$fs/usr/share/"; fi
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$fs/etc/passwd"
  printf 'root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n' >"$fs/etc/group"
  cat >"$work/static/Containerfile" <<'CF'
FROM scratch
COPY fs/ /
USER 65532:65532
CF
  build "$runtime" "$work/static"
fi

# postgres:15: Debian's PostgreSQL 15 with the entrypoint compose uses.
postgres=$prefix/postgres:15
if ! fresh "$postgres"; then
  mkdir -p "$work/postgres"
  cp "$here/standins/postgres-entrypoint.sh" "$work/postgres/"
  cat >"$work/postgres/Containerfile" <<CF
FROM $debian
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql-15 >/dev/null \
 && rm -rf /var/lib/apt/lists/* /var/lib/postgresql/15
COPY postgres-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin PGDATA=/var/lib/postgresql/data
VOLUME /var/lib/postgresql/data
STOPSIGNAL SIGINT
EXPOSE 5432
ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]
CF
  build "$postgres" "$work/postgres"
fi

# nginx:1.27: Debian's nginx in the foreground.
nginx=$prefix/nginx:1.27
if ! fresh "$nginx"; then
  mkdir -p "$work/nginx"
  cat >"$work/nginx/Containerfile" <<CF
FROM $debian
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nginx-light >/dev/null \
 && rm -rf /var/lib/apt/lists/*
STOPSIGNAL SIGQUIT
EXPOSE 8080
CMD ["nginx", "-g", "daemon off;"]
CF
  build "$nginx" "$work/nginx"
fi

# axllent/mailpit: built from its own Go module at the version compose
# names (its web UI's scripts are not in the module: the inbox API, which
# the deploy test reads, and SMTP work; the pages do not).
mailpit_version=v1.27.11
mailpit=$prefix/mailpit:v1.27
if ! fresh "$mailpit"; then
  mkdir -p "$work/mailpit"
  cat >"$work/mailpit/Containerfile" <<CF
FROM $golang AS build
RUN CGO_ENABLED=0 GOFLAGS=-mod=mod go install -trimpath github.com/axllent/mailpit@$mailpit_version
FROM $runtime
COPY --from=build /go/bin/mailpit /mailpit
EXPOSE 1025 8025
ENTRYPOINT ["/mailpit"]
CF
  build "$mailpit" "$work/mailpit"
fi

# Earlier versions of the stand-ins and build stages, no longer named.
podman image prune -f >/dev/null
echo "GO_IMAGE=$golang RUNTIME_IMAGE=$runtime POSTGRES_IMAGE=$postgres NGINX_IMAGE=$nginx MAILPIT_IMAGE=$mailpit"
