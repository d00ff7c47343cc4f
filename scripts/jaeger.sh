#!/usr/bin/env bash
# Builds Jaeger v2 all-in-one (the trace backend `make trace-check` runs)
# from the Go module proxy into .tools/jaeger, once: the first build takes
# minutes (the binary has no UI assets; its query API is what the check
# reads). Prints the binary's path.
set -euo pipefail
cd "$(dirname "$0")/.."
version=v1.76.0
out=.tools/jaeger-$version
if [[ ! -x $out ]]; then
  echo "building jaeger $version (once; takes minutes)..." >&2
  mkdir -p .tools
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  cp tools/jaeger/go.mod "$work/go.mod"
  (cd "$work" && go get -tool "github.com/jaegertracing/jaeger/cmd/jaeger@$version" >&2 \
    && go build -o "$OLDPWD/$out" github.com/jaegertracing/jaeger/cmd/jaeger)
fi
echo "$PWD/$out"
