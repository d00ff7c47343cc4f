# cairn — see README.md. Every target works offline on a fresh clone.
GO      ?= go
BIN     := bin
DEMO    ?= .cairn/demo

.PHONY: build run test bench vet fmt clean functions moto-start moto-stop localstack-start localstack-stop
FUNCTIONS := api model tools commit repair sandboxd

build:
	$(GO) build -o $(BIN)/cairn ./cmd/cairn

## run: a scripted demo turn in embedded mode (writes, lists and reads a file, runs a command)
run: build
	$(BIN)/cairn run --data $(DEMO) --model scripted:demo --approve allow \
		"Write a note in the sandbox, list the workspace, read the note back and count its lines."

## test: vet, then every test (unit, conformance, kill, duplicate delivery, bad input) with the race detector
test:
	$(GO) vet ./...
	@scripts/moto.sh status >/dev/null 2>&1 || echo "AWS endpoint $${CAIRN_AWS_ENDPOINT:-http://127.0.0.1:4566} not reachable: the AWS integration suite skips (start one: scripts/moto.sh start; with CI=true it fails instead)"
	$(GO) test -race -count=1 -timeout 12m ./...

## bench: engine overhead per agent step, steps/second with 8 concurrent sessions, local vs remote sandbox round trips, AWS cost per step
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 1 ./shared/turn/ ./shared/sqlite/
	$(GO) test -run '^$$' -bench . -benchmem -count 1 ./shared/sandboxremote/
	scripts/moto.sh start
	$(GO) test -run '^$$' -bench CostPerAgentStep -benchtime 20x -count 1 ./shared/awsbackend/

## functions: cross-build every Lambda (provided.al2023/arm64) and the sandboxd container binary into dist/<name>/bootstrap + dist/<name>.zip
functions:
	@for f in $(FUNCTIONS); do \
		echo "building $$f"; \
		GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build -tags lambda.norpc -trimpath -ldflags='-s -w' \
			-o dist/$$f/bootstrap ./functions/$$f || exit 1; \
	done
	$(GO) run ./scripts/zipdist $(FUNCTIONS)
	@ls -l dist/*.zip

moto-start:
	scripts/moto.sh start
moto-stop:
	scripts/moto.sh stop
localstack-start:
	scripts/localstack.sh start
localstack-stop:
	scripts/localstack.sh stop

vet:
	$(GO) vet ./...

fmt:
	gofmt -l -w .

clean:
	rm -rf $(BIN) .cairn dist
