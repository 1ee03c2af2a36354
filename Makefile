# usher's build. `make test` is the one command that runs the whole suite on a
# fresh machine: it installs what the tests need when it is missing.
GO ?= go
RACE_PKGS := ./internal/admission/... ./internal/gate/... ./internal/store/... ./internal/ticket/...

.PHONY: test build bench vet fmt deps clean

# The end-to-end tests (real binary, real time, a minute or more each) run
# after the others, not beside them, so that their load does not skew the
# others' timing; -parallel lets them overlap (they mostly wait), -timeout
# leaves them room.
E2E := E2E|Agree

test: deps vet
	$(GO) test -count=1 -timeout 30m -skip '$(E2E)' ./...
	$(GO) test -count=1 -timeout 30m -parallel 16 -run '$(E2E)' ./cmd/usher
	$(GO) test -count=1 -timeout 30m -race -skip '$(E2E)' $(RACE_PKGS)

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
	@./scripts/deps.sh redis-server:redis-server redis-cli:redis-tools chromium:chromium

clean:
	rm -rf bin
