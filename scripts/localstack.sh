#!/usr/bin/env bash
# LocalStack (needs Docker) on port 4566, with cairn's table, bucket and
# queues created by localstack/init/ready.d/10-cairn.sh.
#   scripts/localstack.sh start | stop | status
set -euo pipefail
cd "$(dirname "$0")/../localstack"
URL=http://127.0.0.1:4566
case "${1:-}" in
start)
	docker compose up -d
	for _ in $(seq 1 120); do
		if curl -fsS "$URL/_localstack/init/ready" 2>/dev/null | grep -q '"completed": true'; then
			echo "LocalStack ready on $URL"; exit 0
		fi
		sleep 1
	done
	echo "LocalStack did not become ready; docker compose logs" >&2; exit 1 ;;
stop) docker compose down ;;
status) curl -fsS "$URL/_localstack/health" ;;
*) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
