# usher's build. `make test` is the one command that runs the whole suite on a
# fresh machine: it installs what the tests need when it is missing.
GO ?= go
RACE_PKGS := ./internal/admission/... ./internal/admin/... ./internal/gate/... ./internal/store/... ./internal/ticket/... \
	./internal/guard/... ./internal/limit/... ./internal/token/... ./verify/... \
	./internal/notify/... ./internal/autopilot/... ./internal/analytics/... ./internal/server/... \
	./internal/config/... ./internal/web/...

.PHONY: test fuzz build bench vet fmt deps clean

# The end-to-end tests (real binary, real time, a minute or more each) run
# after the others, not beside them, so that their load does not skew the
# others' timing; -parallel lets them overlap (they mostly wait), -timeout
# leaves them room.
E2E := E2E|Agree

test: deps vet
	$(GO) test -count=1 -timeout 30m -skip '$(E2E)' ./...
	$(GO) test -count=1 -timeout 30m -parallel 16 -run '$(E2E)' ./cmd/usher
	$(GO) test -count=1 -timeout 30m -race -skip '$(E2E)' $(RACE_PKGS)
	$(MAKE) fuzz

# fuzz runs each fuzz target for FUZZTIME beyond its seed corpus
# (testdata/fuzz/<target>, which the plain go test above runs as regression
# cases). Go fuzzes one target per run. An input that fails is written to
# the target's testdata/fuzz: commit it with the fix.
FUZZTIME ?= 10s
# FUZZMIN bounds the time spent shrinking each new input the fuzzer finds.
# scripts/fuzz.sh runs a target again when Go's coordinator stops it with a
# spurious deadline error (go.dev/issue/75804) and no failing input.
FUZZMIN ?= 2s

fuzz:
	GO=$(GO) FUZZTIME=$(FUZZTIME) FUZZMIN=$(FUZZMIN) ./scripts/fuzz.sh FuzzOpen ./internal/ticket
	GO=$(GO) FUZZTIME=$(FUZZTIME) FUZZMIN=$(FUZZMIN) ./scripts/fuzz.sh FuzzRoundTrip ./internal/ticket
	GO=$(GO) FUZZTIME=$(FUZZTIME) FUZZMIN=$(FUZZMIN) ./scripts/fuzz.sh FuzzParse ./internal/config
	GO=$(GO) FUZZTIME=$(FUZZTIME) FUZZMIN=$(FUZZMIN) ./scripts/fuzz.sh FuzzRuntime ./internal/config
	GO=$(GO) FUZZTIME=$(FUZZTIME) FUZZMIN=$(FUZZMIN) ./scripts/fuzz.sh FuzzCompile ./internal/rules
	GO=$(GO) FUZZTIME=$(FUZZTIME) FUZZMIN=$(FUZZMIN) ./scripts/fuzz.sh FuzzEval ./internal/rules
	GO=$(GO) FUZZTIME=$(FUZZTIME) FUZZMIN=$(FUZZMIN) ./scripts/fuzz.sh FuzzClientInfo ./internal/server
	GO=$(GO) FUZZTIME=$(FUZZTIME) FUZZMIN=$(FUZZMIN) ./scripts/fuzz.sh FuzzRequestID ./internal/server
	GO=$(GO) FUZZTIME=$(FUZZTIME) FUZZMIN=$(FUZZMIN) ./scripts/fuzz.sh FuzzVerify ./internal/guard
	GO=$(GO) FUZZTIME=$(FUZZTIME) FUZZMIN=$(FUZZMIN) ./scripts/fuzz.sh FuzzOutHeader ./internal/gate
	GO=$(GO) FUZZTIME=$(FUZZTIME) FUZZMIN=$(FUZZMIN) ./scripts/fuzz.sh FuzzRequestPath ./internal/gate
	GO=$(GO) FUZZTIME=$(FUZZTIME) FUZZMIN=$(FUZZMIN) ./scripts/fuzz.sh FuzzVerify ./internal/token
	GO=$(GO) FUZZTIME=$(FUZZTIME) FUZZMIN=$(FUZZMIN) ./scripts/fuzz.sh FuzzVerify ./verify
	GO=$(GO) FUZZTIME=$(FUZZTIME) FUZZMIN=$(FUZZMIN) ./scripts/fuzz.sh FuzzWaitingJSONAsMarshal ./internal/gate
	GO=$(GO) FUZZTIME=$(FUZZTIME) FUZZMIN=$(FUZZMIN) ./scripts/fuzz.sh FuzzFill ./internal/web
	GO=$(GO) FUZZTIME=$(FUZZTIME) FUZZMIN=$(FUZZMIN) ./scripts/fuzz.sh FuzzLanguage ./internal/web

build:
	$(GO) build -o bin/usher ./cmd/usher

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

vet:
	@unformatted="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) vet ./...

# deps installs the system packages the tests use, as root, when missing.
deps:
	@./scripts/deps.sh redis-server:redis-server redis-cli:redis-tools systemd-analyze:systemd chromium:chromium nginx:nginx caddy:caddy haproxy:haproxy wrk:wrk

clean:
	rm -rf bin dist

# release cross-builds static binaries (CGO_ENABLED=0, -trimpath) for every
# PLATFORMS entry into $(DIST)/usher_<version>_<os>_<arch>/usher (with
# LICENSE, README.md and CHANGELOG.md), packs each in a .tar.gz beside it
# and lists their SHA-256 sums in $(DIST)/SHA256SUMS; $(DIST)/NOTES.md is
# the version's section of CHANGELOG.md (Unreleased for a build between
# tags), and a version without one fails the release. VERSION (from
# scripts/version.sh: the tag, or the VERSION file's version as a
# pre-release of the commit), COMMIT and DATE are stamped into the binary
# (usher version prints them); override any of them: make release
# VERSION=v0.3.0. The release workflow (.github/workflows/release.yml) runs
# this target on a tag.
VERSION ?= $(shell ./scripts/version.sh)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
DATE ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
DIST ?= dist
RELEASE_LDFLAGS = -s -w -X main.Version=$$version -X main.Commit=$$commit -X main.Date=$$date

.PHONY: release
release:
	@set -e; version='$(VERSION)'; commit='$(COMMIT)'; date='$(DATE)'; dist='$(DIST)'; \
	case $$version in ''|*[!A-Za-z0-9._+-]*) echo "make release: VERSION must be like v0.1.0, got '$$version'" >&2; exit 1;; esac; \
	rm -rf "$$dist"; mkdir -p "$$dist"; \
	for platform in $(PLATFORMS); do \
		os=$${platform%/*}; arch=$${platform#*/}; \
		name=usher_$${version}_$${os}_$${arch}; \
		echo "building $$dist/$$name"; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath \
			-ldflags "$(RELEASE_LDFLAGS)" -o "$$dist/$$name/usher" ./cmd/usher; \
		cp LICENSE README.md CHANGELOG.md "$$dist/$$name/"; \
		tar -C "$$dist" -czf "$$dist/$$name.tar.gz" $$name; \
	done; \
	notes=$${version#v}; case $$notes in *-*) notes=Unreleased;; esac; \
	awk -v h="## [$$notes]" 'index($$0, "## [") == 1 { p = index($$0, h) == 1; next } /^\[[^]]*\]: / { next } p' CHANGELOG.md > "$$dist/NOTES.md"; \
	if [ ! -s "$$dist/NOTES.md" ]; then echo "make release: CHANGELOG.md has no section [$$notes] for $$version" >&2; exit 1; fi; \
	cd "$$dist"; \
	if command -v sha256sum >/dev/null; then sha256sum *.tar.gz; else shasum -a 256 *.tar.gz; fi > SHA256SUMS; \
	cat SHA256SUMS

# image builds the container image (the Dockerfile: a static binary on
# distroless, non-root) as $(IMAGE):$(VERSION) with the first container
# engine that works: podman, buildah or docker (ENGINE=... to choose). With
# IMAGE_PLATFORMS (like linux/amd64,linux/arm64) it builds one image per
# platform under one manifest list; PUSH=1 pushes it (and, for a version
# tag, $(IMAGE):latest). Without an engine it says so and fails: the
# binaries of make release need none.
IMAGE ?= ghcr.io/usherhq/usher
IMAGE_PLATFORMS ?=
PUSH ?=
ENGINE ?= $(shell for e in podman buildah docker; do if command -v $$e >/dev/null 2>&1 && $$e info >/dev/null 2>&1; then echo $$e; break; fi; done)

.PHONY: image
image:
	@set -e; engine='$(ENGINE)'; image='$(IMAGE)'; version='$(VERSION)'; platforms='$(IMAGE_PLATFORMS)'; push='$(PUSH)'; \
	if [ -z "$$engine" ]; then \
		echo "make image: no working container engine (podman, buildah or docker: none is installed, or its daemon or user namespaces are not available here)." >&2; \
		echo "make image: install podman (or start docker) and run it again; make release builds the binaries without one." >&2; \
		exit 1; \
	fi; \
	case $$version in ''|*[!A-Za-z0-9._+-]*) echo "make image: VERSION must be like v0.1.0, got '$$version'" >&2; exit 1;; esac; \
	tags="$$image:$$version"; \
	case $$version in v*-*|*-dirty) ;; v*) tags="$$tags $$image:latest";; esac; \
	args="--build-arg VERSION=$$version --build-arg COMMIT=$(COMMIT) --build-arg DATE=$(DATE)"; \
	echo "make image: $$engine building $$tags$${platforms:+ for $$platforms}"; \
	case $$engine in \
	docker) \
		targs=; for t in $$tags; do targs="$$targs -t $$t"; done; \
		if [ -n "$$push" ]; then out=--push; elif [ -z "$$platforms" ]; then out=--load; else out=; fi; \
		docker buildx build $${platforms:+--platform $$platforms} $$args $$targs $$out . ;; \
	podman|buildah) \
		$$engine rmi -f "$$image:$$version" >/dev/null 2>&1 || true; \
		$$engine manifest rm "$$image:$$version" >/dev/null 2>&1 || true; \
		$$engine build $${platforms:+--platform $$platforms} $$args --manifest "$$image:$$version" . ; \
		for t in $$tags; do [ "$$t" = "$$image:$$version" ] || $$engine tag "$$image:$$version" "$$t"; done; \
		if [ -n "$$push" ]; then for t in $$tags; do $$engine manifest push --all "$$image:$$version" "docker://$$t"; done; fi ;; \
	*) echo "make image: unknown ENGINE '$$engine' (podman, buildah or docker)" >&2; exit 1 ;; \
	esac
