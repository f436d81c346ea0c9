# BoxOffice — run `make help` for the targets.
SHELL := /bin/bash
PG := infra/dev/postgres.sh

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@grep -E '^[a-z/-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

# The binary is built under .data/ (git-ignored) and run directly, not with
# `go run`: Ctrl-C then stops it cleanly instead of ending in "Error 1".
.PHONY: run
run: ## bring up PostgreSQL, migrate, seed a demo tenant and its store, run API + workers + jobs
	@base=$$($(PG)) && \
	  export DATABASE_URL="$${DATABASE_URL:-$$base/boxoffice?sslmode=disable}" && \
	  mkdir -p .data/bin && go build -tags dev -o .data/bin/boxoffice . && \
	  exec .data/bin/boxoffice dev

# stripe-mock, which checks the Stripe adapter's requests against Stripe's
# OpenAPI document, at a pinned version, built once into .data/tools.
STRIPE_MOCK_VERSION := v0.203.0
STRIPE_MOCK := .data/tools/stripe-mock-$(STRIPE_MOCK_VERSION)

$(STRIPE_MOCK):
	@mkdir -p .data/tools && \
	  GOBIN=$$(pwd)/.data/tools go install github.com/stripe/stripe-mock@$(STRIPE_MOCK_VERSION) && \
	  mv .data/tools/stripe-mock $@

# The fault suite (internal/faults) runs real processes and PostgreSQL
# clusters of its own: it runs after the rest, alone, so that slow
# end-to-end tests do not starve each other on a small machine.
FAULTS := ./internal/faults

.PHONY: test
test: $(STRIPE_MOCK) ## bring up PostgreSQL, Chromium, promtool, Lighthouse, axe and stripe-mock; alert rules, every test with -race (axe in the browser tests), the fault suite, then Lighthouse
	@base=$$($(PG)) && \
	  export TEST_DATABASE_URL="$${TEST_DATABASE_URL:-$$base/boxoffice_test?sslmode=disable}" && \
	  export BOXOFFICE_PG_BIN="$${BOXOFFICE_PG_BIN:-$$($(PG) bin)}" && \
	  export BOXOFFICE_STRIPE_MOCK="$(abspath $(STRIPE_MOCK))" && \
	  export BOXOFFICE_CHROMIUM="$$(infra/dev/chromium.sh)" && \
	  export BOXOFFICE_AUDIT_TOOLS="$$(infra/dev/audit.sh)" && \
	  promtool=$$(infra/dev/promtool.sh) && \
	  $$promtool check rules infra/observability/alerts.yml && \
	  (cd infra/observability && $$promtool test rules alerts_test.yml) && \
	  if command -v terraform >/dev/null; then TF_CLI_CONFIG_FILE=/dev/null terraform fmt -check -recursive infra/terraform; fi && \
	  go test -race -count=1 -timeout 15m $$(go list ./... | grep -v '/internal/faults$$') && \
	  go test -count=1 -p 1 -timeout 10m $(FAULTS)/... && \
	  $(LIGHTHOUSE)

# Lighthouse times pages: it runs alone, after the rest (TestLighthouse).
LIGHTHOUSE := BOXOFFICE_LIGHTHOUSE=1 go test -count=1 -timeout 30m -run '^TestLighthouse$$' -v .

.PHONY: audit
audit: ## Lighthouse on the demo's store and console (median of five runs a page; installs Lighthouse from npm)
	@base=$$($(PG)) && \
	  export TEST_DATABASE_URL="$${TEST_DATABASE_URL:-$$base/boxoffice_test?sslmode=disable}" && \
	  export BOXOFFICE_CHROMIUM="$$(infra/dev/chromium.sh)" && \
	  export BOXOFFICE_AUDIT_TOOLS="$$(infra/dev/audit.sh)" && \
	  $(LIGHTHOUSE)

# A real Prometheus next to `make run` (run it in another terminal): it
# scrapes the dev process's /metrics and evaluates the alert rules; its UI is
# on 127.0.0.1:9091. Data lives under .data/prometheus (git-ignored).
.PHONY: observe
observe: ## run Prometheus scraping `make run` with the alert rules (UI on 127.0.0.1:9091)
	@infra/dev/promtool.sh >/dev/null && mkdir -p .data/prometheus && \
	  exec prometheus --config.file=infra/observability/prometheus.yml --storage.tsdb.path=.data/prometheus \
	    --web.listen-address=127.0.0.1:9091

# golangci-lint at a pinned version, built once into .data/tools
# (git-ignored); its linters are chosen in .golangci.yml.
GOLANGCI_LINT_VERSION := v2.15.0
GOLANGCI_LINT := .data/tools/golangci-lint-$(GOLANGCI_LINT_VERSION)

$(GOLANGCI_LINT):
	@mkdir -p .data/tools && \
	  GOBIN=$$(pwd)/.data/tools go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION) && \
	  mv .data/tools/golangci-lint $@

.PHONY: lint
lint: $(GOLANGCI_LINT) ## gofmt, go vet and golangci-lint (both builds: production and -tags dev)
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	go vet ./...
	go vet -tags dev .
	$(GOLANGCI_LINT) run ./...
	$(GOLANGCI_LINT) run --build-tags dev ./...

.PHONY: docs
docs: ## regenerate docs/configuration.md from the settings' declarations in internal/config
	go test -count=1 -run TestConfigurationDocIsCurrent ./internal/config -update

.PHONY: screenshots
screenshots: ## retake the pictures of the demo (store, mail, console) into docs/ (boxoffice dev driven in Chromium; poppler-utils for the PDF)
	@base=$$($(PG)) && \
	  export TEST_DATABASE_URL="$${TEST_DATABASE_URL:-$$base/boxoffice_test?sslmode=disable}" && \
	  export BOXOFFICE_CHROMIUM="$$(infra/dev/chromium.sh)" && \
	  BOXOFFICE_DOCS_SHOTS=docs go test -count=1 -run TestDocsScreenshots -v . | grep -v '^=== '

.PHONY: bench
bench: ## run the benchmark scenarios and print figures and ratios
	@base=$$($(PG)) && \
	  export BENCH_DATABASE_URL="$${BENCH_DATABASE_URL:-$$base/boxoffice_bench?sslmode=disable}" && \
	  export BOXOFFICE_PG_BIN="$${BOXOFFICE_PG_BIN:-$$($(PG) bin)}" && \
	  export BOXOFFICE_CHROMIUM="$$(infra/dev/chromium.sh)" && \
	  go run -tags dev . bench all

# The production binary leaves out `dev` and `bench` (and with them the SQS
# emulator, the mail catcher and the test harness); -tags dev puts them in.
.PHONY: build
build: ## build the production boxoffice binary (without dev and bench), stamped with the commit
	go build -ldflags "-X main.version=$$(git describe --always --dirty 2>/dev/null || echo unknown)" -o boxoffice .

# The production image, tagged with the commit: with docker when its
# daemon answers, else with podman (in docker's format, which keeps the
# health check; the sandbox's containers.conf). GO_IMAGE and RUNTIME_IMAGE,
# when set, name the base images (infra/deploy/standins.sh prints them).
.PHONY: image
image: ## build the container image boxoffice:<commit> (docker, or podman)
	@if docker info >/dev/null 2>&1; then engine=docker; format=; \
	else export CONTAINERS_CONF="$${CONTAINERS_CONF:-$$(infra/dev/containers.sh)}"; engine=podman; format="--format docker"; fi; \
	set -x; $$engine build $$format $${GO_IMAGE:+--build-arg GO_IMAGE=$$GO_IMAGE} \
	  $${RUNTIME_IMAGE:+--build-arg RUNTIME_IMAGE=$$RUNTIME_IMAGE} --build-arg VERSION=$$(git rev-parse HEAD) \
	  -t boxoffice:$$(git rev-parse HEAD) .

# The deploy test: podman (installed when missing), stand-ins for the base
# images no registry gives here, the image built, compose.yaml brought up,
# a ticket bought through nginx, the API restarted, a worker killed.
.PHONY: deploy-test
deploy-test: ## build the image and run compose.yaml with podman, buy a ticket through it, restart and kill parts
	BOXOFFICE_DEPLOY_TEST=1 go test -count=1 -timeout 40m -v -run '^TestDeploy$$' ./infra/deploy
