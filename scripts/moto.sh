#!/usr/bin/env bash
# moto_server on the LocalStack port, for the AWS integration suite where
# Docker (and so LocalStack) is not available.
#   scripts/moto.sh start | stop | reset | status
set -euo pipefail
HOST=127.0.0.1 PORT=${CAIRN_MOTO_PORT:-4566}
DIR=${CAIRN_MOTO_DIR:-$(cd "$(dirname "$0")/.." && pwd)/.cairn/moto}
URL="http://$HOST:$PORT"
up() { curl -sS -o /dev/null "$URL/" 2>/dev/null; }  # anything answering: moto or LocalStack

case "${1:-}" in
start)
	if up; then echo "moto already answering on $URL"; exit 0; fi
	command -v moto_server >/dev/null || { echo "moto_server not found (it is preinstalled on cairn machines: pip's moto[server])" >&2; exit 1; }
	mkdir -p "$DIR"
	nohup moto_server -H "$HOST" -p "$PORT" >"$DIR/moto.log" 2>&1 &
	echo $! >"$DIR/moto.pid"
	for _ in $(seq 1 100); do
		if up; then echo "moto answering on $URL (log $DIR/moto.log)"; exit 0; fi
		sleep 0.1
	done
	echo "moto did not start; see $DIR/moto.log" >&2; exit 1 ;;
stop)
	if [[ -f "$DIR/moto.pid" ]]; then kill "$(cat "$DIR/moto.pid")" 2>/dev/null || true; rm -f "$DIR/moto.pid"; fi
	echo "moto stopped" ;;
reset)
	curl -fsS -X POST "$URL/moto-api/reset" >/dev/null && echo "moto state reset" ;;
status)
	if up; then echo "moto answering on $URL"; else echo "nothing on $URL"; exit 1; fi ;;
*)
	echo "usage: $0 start|stop|reset|status" >&2; exit 2 ;;
esac
