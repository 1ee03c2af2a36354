# usher's build. `make test` is the one command that runs the whole suite on a
# fresh machine: it installs what the tests need when it is missing.
GO ?= go
RACE_PKGS := ./internal/admission/... ./internal/gate/... ./internal/store/... ./internal/ticket/...

.PHONY: test build bench vet fmt deps clean

test: deps vet
	$(GO) test -count=1 ./...
	$(GO) test -count=1 -race $(RACE_PKGS)

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
	@./scripts/deps.sh redis-server:redis-server redis-cli:redis-tools

clean:
	rm -rf bin
