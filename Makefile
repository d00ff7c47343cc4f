# cairn — see README.md. Every target works offline on a fresh clone.
GO      ?= go
BIN     := bin
DEMO    ?= .cairn/demo

.PHONY: build run test bench vet fmt clean

build:
	$(GO) build -o $(BIN)/cairn ./cmd/cairn

## run: a scripted demo turn in embedded mode (writes, lists and reads a file, runs a command)
run: build
	$(BIN)/cairn run --data $(DEMO) --model scripted:demo --approve allow \
		"Write a note in the sandbox, list the workspace, read the note back and count its lines."

## test: vet, then every test (unit, conformance, kill, duplicate delivery, bad input) with the race detector
test:
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 12m ./...

## bench: engine overhead per agent step and steps/second with 8 concurrent sessions
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 1 ./shared/turn/ ./shared/sqlite/

vet:
	$(GO) vet ./...

fmt:
	gofmt -l -w .

clean:
	rm -rf $(BIN) .cairn
