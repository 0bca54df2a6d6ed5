# Developer habits (see README.md, "Contributing"). Every target is a plain go command, so CI and
# a clean clone need nothing but Go: staticcheck is a tool dependency pinned in go.mod.
GO       ?= go
FUZZTIME ?= 30s
BIN      ?= bin/ain

.PHONY: build test test-short lint fuzz

build:
	$(GO) build -o $(BIN) ./cmd/ain

# The README's test command, exactly (what .ci/run runs): integration tests start a local
# sandbox (a real etcd and kube-apiserver), one package at a time.
test:
	scripts/debian-packages.sh && $(GO) vet ./... && $(GO) test -p 1 -timeout 80m ./...

# Unit, golden, corpus and fuzz-seed tests only: every integration test skips under -short with
# a message, so no sandbox is started. Prints how long it took.
test-short:
	@start=$$(date +%s); \
	$(GO) test -short ./... || exit $$?; \
	echo "test-short: $$(( $$(date +%s) - start ))s"

lint:
	@out=$$(gofmt -l cmd internal pkg test); if [ -n "$$out" ]; then echo "gofmt -l:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

# Runs every fuzz target for FUZZTIME each (make fuzz FUZZTIME=2m), one at a time.
fuzz:
	@set -e; grep -rl --include='*_test.go' '^func Fuzz' cmd internal pkg | while read -r f; do \
		dir=./$$(dirname "$$f"); \
		for fn in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$$f"); do \
			echo "== $$dir $$fn"; \
			$(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) "$$dir"; \
		done; \
	done
