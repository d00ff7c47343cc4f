# cairn — see README.md. Every target works offline on a fresh clone.
GO      ?= go
BIN     := bin
# bash with pipefail: `make bench` tees every benchmark into bench.log and a
# failing benchmark must still fail the target
SHELL   := /bin/bash
.SHELLFLAGS := -o pipefail -c
DEMO    ?= .cairn/demo

.PHONY: build run test bench trace-check vet fmt clean functions coldstart moto-start moto-stop localstack-start localstack-stop
FUNCTIONS := api model tools commit repair workflow isolate stream sandboxd

build:
	$(GO) build -o $(BIN)/cairn ./cmd/cairn

## run: a scripted demo turn in embedded mode (writes, lists and reads a file, runs a command)
run: build
	$(BIN)/cairn run --data $(DEMO) --model scripted:demo --approve allow \
		"Write a note in the sandbox, list the workspace, read the note back and count its lines."

## test: vet, then every test (unit, conformance, crash points, kill, sandboxes, providers, workflows, bad input) with the race detector, then the infra assertions
test:
	$(GO) vet ./...
	@scripts/moto.sh status >/dev/null 2>&1 || echo "AWS endpoint $${CAIRN_AWS_ENDPOINT:-http://127.0.0.1:4566} not reachable: the AWS integration suite skips (start one: scripts/moto.sh start; with CI=true it fails instead)"
	$(GO) test -race -count=1 -timeout 30m ./...
	cd infra && $(GO) vet ./... && $(INFRA_ENV) $(GO) test -count=1 ./...

## bench: engine overhead per agent step, steps/second with 8 concurrent sessions, local vs remote sandbox round trips, isolate round trip, a 1,000-node fan-out, AWS cost per step
bench:
	@rm -f bench.log
	$(GO) test -run '^$$' -bench . -benchmem -count 1 ./shared/turn/ ./shared/embedded/sqlite/ | tee -a bench.log
	$(GO) test -run '^$$' -bench . -benchmem -count 1 ./shared/sandbox/remote/ | tee -a bench.log
	$(GO) test -run '^$$' -bench 'IsolateRoundTrip|EvaluateInProcess' -benchmem -count 1 ./shared/workflow/isolate/ ./shared/workflow/script/ | tee -a bench.log
	$(GO) test -run '^$$' -bench FanOut1000 -benchtime 1x -count 1 ./shared/workflow/ | tee -a bench.log
	scripts/moto.sh start
	$(GO) test -run '^$$' -bench CostPerAgentStep -benchtime 20x -count 1 ./shared/aws/backend/ | tee -a bench.log
	$(GO) test -run '^$$' -bench FanOutOnEndpoint -benchtime 1x -count 1 -timeout 60m ./shared/aws/backend/ | tee -a bench.log
	@scripts/bench-summary.sh bench.log

## trace-check: a turn seen by a real trace backend — Jaeger v2 (built once into .tools by scripts/jaeger.sh, minutes) on loopback, cairn dev --otlp (embedded, and --backend aws on moto), one trace with every phase in order
trace-check:
	scripts/moto.sh start
	JAEGER_BIN=$$(scripts/jaeger.sh) $(GO) test -tags tracecheck -run TestJaegerSeesATurn -count=1 -v ./cmd/cairn/

## functions: cross-build every Lambda (provided.al2023/arm64) and the sandboxd container binary into dist/<name>/bootstrap + dist/<name>.zip
functions:
	@for f in $(FUNCTIONS); do \
		echo "building $$f"; \
		GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build -tags lambda.norpc -trimpath -ldflags='-s -w' \
			-o dist/$$f/bootstrap ./functions/$$f || exit 1; \
	done
	$(GO) run ./scripts/zipdist $(FUNCTIONS)
	@ls -l dist/*.zip

## coldstart: each function's binary size and its init time under the Lambda Runtime Interface Emulator against moto (docs/PERFORMANCE.md, issue 16; not part of test)
coldstart:
	scripts/moto.sh start
	GO=$(GO) scripts/coldstart.sh

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

## AWS deployment (infra/: the CDK app in Go, its own module; docs/DEPLOY.md).
## STAGE=dev|prod; CDK_CONTEXT="key=value …" adds CDK context (alarmEmail=…, jwtIssuer=…, …).
STAGE            ?= dev
CDK_CONTEXT      ?=
CDK_VERSION      := 2.1148.1
CDKLOCAL_VERSION := 3.0.4
# The CDK CLI, pinned, from npm (nothing installed in the tree).
CDK      = npx --yes --package aws-cdk@$(CDK_VERSION) cdk
CDKLOCAL = npx --yes --package aws-cdk@$(CDK_VERSION) --package aws-cdk-local@$(CDKLOCAL_VERSION) cdklocal
# jsii (the CDK's Go bindings) runs node; Node 20 works but is past jsii's support date.
INFRA_ENV = JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20

.PHONY: synth deploy deploy-local infra-test

## synth: write infra/cdk.out offline — no AWS credentials, no lookups (runs the Go app directly)
synth: functions
	rm -rf infra/cdk.out
	cd infra && $(INFRA_ENV) $(GO) run . stage=$(STAGE) $(CDK_CONTEXT)

## deploy: synth, then the pinned CDK CLI bootstraps (idempotent) and deploys with your AWS credentials
deploy: synth
	cd infra && $(CDK) bootstrap --app cdk.out && $(CDK) deploy --app cdk.out --all --require-approval broadening

## deploy-local: the stack without Fargate sandboxes, deployed to LocalStack with cdklocal.
## LOCAL_ENDPOINT: where LocalStack listens — http://127.0.0.1:4566, http://localhost:4566, 127.0.0.1, …
## (default $AWS_ENDPOINT_URL, else http://127.0.0.1:4566); scripts/deploy-local.sh derives the CLI's endpoints from it.
LOCAL_ENDPOINT ?=
deploy-local: functions
	rm -rf infra/cdk.out
	cd infra && $(INFRA_ENV) $(GO) run . stage=dev prefix=cairn-local sandboxes=lambda $(CDK_CONTEXT)
	CDKLOCAL='$(CDKLOCAL)' scripts/deploy-local.sh $(LOCAL_ENDPOINT)

## infra-test: vet and the CDK assertion tests of infra/ (also part of `make test`)
infra-test:
	cd infra && $(GO) vet ./... && $(INFRA_ENV) $(GO) test -count=1 ./...
