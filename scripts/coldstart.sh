#!/usr/bin/env bash
# Cold start of every Lambda function (issue 16): binary size as `make
# functions` builds it (linux/arm64), and init time under the AWS Lambda
# Runtime Interface Emulator — each function built for this machine, run as
# the bootstrap under aws-lambda-rie with its environment pointing at a local
# endpoint (moto: scripts/moto.sh start), invoked once; the figure is rapid's
# `INIT REPORT(durationMs: …)` line (the REPORT line's "Init Duration" means
# nothing under the emulator). The function's first init includes the
# process start; each function is measured RUNS times (a fresh process each).
#
#   scripts/coldstart.sh            # or: make coldstart
#   RUNS=5 FUNCTIONS="api model" scripts/coldstart.sh
#
# Needs: Go, moto/LocalStack on $CAIRN_AWS_ENDPOINT (default http://127.0.0.1:4566),
# and the module proxy once (aws-lambda-rie is built from
# github.com/aws/aws-lambda-runtime-interface-emulator at $RIE_VERSION).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
ENDPOINT=${CAIRN_AWS_ENDPOINT:-http://127.0.0.1:4566}
FUNCTIONS=${FUNCTIONS:-api model tools commit repair workflow isolate stream}
RUNS=${RUNS:-3}
RIE_VERSION=${RIE_VERSION:-v0.0.0-20261030222936-bef5c4ba774d}
OUT=${OUT:-$PWD/.cairn/coldstart}
mkdir -p "$OUT/bin" "$OUT/arm64" "$OUT/host"

RIE=$OUT/bin/aws-lambda-rie
if [[ ! -x $RIE ]]; then
	echo "building aws-lambda-rie $RIE_VERSION"
	(cd "$OUT" && GOFLAGS=-mod=mod GOBIN="$OUT/bin" $GO install "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@$RIE_VERSION")
fi
curl -sS -o /dev/null "$ENDPOINT/" || { echo "nothing answers on $ENDPOINT: scripts/moto.sh start" >&2; exit 1; }

# The resources a function's environment names (backend.Provision).
ENVFILE=$OUT/env
$GO run ./scripts/coldstart -endpoint "$ENDPOINT" -prefix cairn-coldstart >"$ENVFILE"

printf '%-9s %12s %12s   %s\n' function "arm64 bytes" "host bytes" "INIT REPORT durationMs (each run)"
for f in $FUNCTIONS; do
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $GO build -tags lambda.norpc -trimpath -ldflags='-s -w' -o "$OUT/arm64/$f" "./functions/$f"
	CGO_ENABLED=0 $GO build -tags lambda.norpc -trimpath -ldflags='-s -w' -o "$OUT/host/$f" "./functions/$f"
	event='{"Records":[]}' # an empty SQS batch: nothing to do
	case $f in
	api) event='{"version":"2.0","routeKey":"$default","rawPath":"/v1/health","requestContext":{"http":{"method":"GET","path":"/v1/health"}}}' ;;
	repair) event='{}' ;;
	isolate) event='{"script":"result = 1","run_id":"r","now":"2026-12-01T00:00:00Z"}' ;;
	# a function URL event with an IAM caller, for a session that does not
	# exist: one GetItem, then a 404 (the emulator has no response
	# streaming: it returns the streamed body whole, prelude included)
	stream) event='{"version":"2.0","rawPath":"/v1/sessions/ses_coldstart/events","headers":{"accept":"text/event-stream"},"requestContext":{"http":{"method":"GET","path":"/v1/sessions/ses_coldstart/events"},"authorizer":{"iam":{"userArn":"arn:aws:iam::000000000000:user/coldstart","accountId":"000000000000"}}}}' ;;
	esac
	times=()
	for _ in $(seq "$RUNS"); do
		log=$OUT/$f.rie.log
		# the emulator's runtime API is 127.0.0.1:9001: one function at a time
		env -i PATH="$PATH" HOME="${HOME:-/root}" AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test \
			AWS_LAMBDA_FUNCTION_TIMEOUT=10 AWS_LAMBDA_FUNCTION_MEMORY_SIZE=512 CAIRN_SANDBOX_DIR="$OUT/sandboxes" \
			$(cat "$ENVFILE") "$RIE" --runtime-interface-emulator-address 127.0.0.1:18080 "$OUT/host/$f" >"$log" 2>&1 &
		rie=$!
		for _ in $(seq 100); do curl -s -o /dev/null 127.0.0.1:18080 2>/dev/null && break; sleep 0.05; done
		curl -s -m 15 -o "$OUT/$f.response" -XPOST http://127.0.0.1:18080/2015-03-31/functions/function/invocations -d "$event" || true
		for _ in $(seq 100); do grep -q 'INIT REPORT' "$log" && break; sleep 0.05; done
		kill "$rie" 2>/dev/null || true
		wait "$rie" 2>/dev/null || true
		ms=$(grep -o 'INIT REPORT(durationMs: [0-9.]*' "$log" | head -1 | grep -o '[0-9.]*$' || true)
		times+=("${ms:-none}")
	done
	printf '%-9s %12s %12s   %s\n' "$f" "$(stat -c %s "$OUT/arm64/$f")" "$(stat -c %s "$OUT/host/$f")" "${times[*]}"
done
echo "machine: $(uname -srm), $(nproc) cores, $($GO version | cut -d' ' -f3); logs in $OUT/*.rie.log"
