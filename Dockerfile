# syntax=docker/dockerfile:1
# The production image: the boxoffice binary, static, on distroless — no
# shell, no package manager, a non-root user. Build it with the commit as
# its tag (make image, with docker or podman):
#   docker build --build-arg VERSION=$(git rev-parse HEAD) -t boxoffice:$(git rev-parse HEAD) .
# The same image runs every role: `migrate` as a one-shot task before the
# rest start, then `serve`, `work` (and `psp-sim` for a staging provider).
#
# The two base images are build arguments: production pulls the public
# ones below; where no registry can be reached, stand-ins with the same
# contents are named instead (infra/deploy/standins.sh).
ARG GO_IMAGE=golang:1.26-bookworm
ARG RUNTIME_IMAGE=gcr.io/distroless/static-debian12:nonroot

FROM ${GO_IMAGE} AS build
WORKDIR /src
# Modules first: a layer that changes only with go.mod/go.sum.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=unknown
# Without -tags dev: no `dev` command, no benchmarks. CGO off: a static
# binary for an image with no libc.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/boxoffice .

FROM ${RUNTIME_IMAGE}
ARG VERSION=unknown
LABEL org.opencontainers.image.title="boxoffice" \
      org.opencontainers.image.revision="${VERSION}" \
      org.opencontainers.image.description="Flash-sale reservations of numbered inventory"
COPY --from=build /out/boxoffice /boxoffice
# 65532:65532 is distroless's nonroot user (by number: no name lookup).
USER 65532:65532
# The API and its metrics listen on every interface inside the container.
ENV BOXOFFICE_ADDR=0.0.0.0:8080 \
    BOXOFFICE_METRICS_ADDR=0.0.0.0:9090
EXPOSE 8080 9090
# Every long-running role (serve, work) answers /livez on its metrics
# listener; no shell in the image, so the binary asks.
HEALTHCHECK --interval=5s --timeout=3s --start-period=10s --retries=3 \
    CMD ["/boxoffice", "healthcheck", "http://127.0.0.1:9090/livez"]
ENTRYPOINT ["/boxoffice"]
CMD ["serve"]
