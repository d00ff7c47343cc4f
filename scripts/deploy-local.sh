#!/usr/bin/env bash
# Deploys infra/cdk.out (`make deploy-local` synthesizes it) to LocalStack
# with cdklocal, at the endpoint given — as http://127.0.0.1:4566,
# http://localhost:4566, 127.0.0.1, localhost:4566, … alike.
#   scripts/deploy-local.sh [ENDPOINT]         bootstrap and deploy
#   scripts/deploy-local.sh --env [ENDPOINT]   print the endpoint variables, do nothing
# ENDPOINT defaults to $AWS_ENDPOINT_URL, else http://127.0.0.1:4566 (a
# missing scheme is http, a missing port 4566). $CDKLOCAL is the cdklocal
# command (the Makefile passes the pinned one).
#
# Why: cdklocal (aws-cdk-local 3.x with aws-cdk ≥ 2.177) configures the
# CLI's SDK only through AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_S3. Without
# them it uses http://localhost.localstack.cloud:4566 and
# s3.localhost.localstack.cloud, which need public DNS; with
# AWS_ENDPOINT_URL alone it refuses to start. And S3 must be reachable for
# virtual-hosted bucket names (<bucket>.<host>) unless the host is an IP
# address, for which the SDK addresses buckets by path. So: both variables
# always, with the host as an IP address — localhost becomes 127.0.0.1
# (LocalStack's compose file listens on 127.0.0.1 only, and Node may try
# ::1 first for localhost); another name is resolved to its IPv4 address
# for S3 unless AWS_ENDPOINT_URL_S3 is set.
set -euo pipefail

print_env=false
if [[ "${1:-}" == "--env" ]]; then print_env=true; shift; fi
endpoint=${1:-${AWS_ENDPOINT_URL:-http://127.0.0.1:4566}}

[[ "$endpoint" == *://* ]] || endpoint="http://$endpoint"
scheme=${endpoint%%://*}
authority=${endpoint#*://}
authority=${authority%%/*}
if [[ "$authority" == \[* ]]; then # [v6]:port
	host=${authority%%]*}]
	port=${authority#"$host"}
	port=${port#:}
else
	host=${authority%%:*}
	port=
	[[ "$authority" == *:* ]] && port=${authority##*:}
fi
port=${port:-4566}
case "$scheme" in http | https) ;; *) echo "deploy-local: endpoint $endpoint: want http or https" >&2; exit 2 ;; esac
[[ -n "$host" && "$port" =~ ^[0-9]+$ ]] || { echo "deploy-local: endpoint $endpoint: want [http://]HOST[:PORT]" >&2; exit 2; }

is_ip() { [[ "$1" =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$ || "$1" == \[*\] ]]; }
case "$host" in
localhost | localhost.) host=127.0.0.1 ;;
esac
url="$scheme://$host:$port"
s3=${AWS_ENDPOINT_URL_S3:-}
if [[ -z "$s3" ]]; then
	if is_ip "$host"; then
		s3=$url
	else
		ip=$({ getent ahostsv4 "$host" 2>/dev/null || true; } | awk 'NR == 1 { print $1 }')
		[[ -n "$ip" ]] || { echo "deploy-local: cannot resolve $host to an IPv4 address for S3; set AWS_ENDPOINT_URL_S3" >&2; exit 2; }
		s3="$scheme://$ip:$port"
	fi
fi

export AWS_ENDPOINT_URL=$url AWS_ENDPOINT_URL_S3=$s3
if $print_env; then
	echo "AWS_ENDPOINT_URL=$AWS_ENDPOINT_URL"
	echo "AWS_ENDPOINT_URL_S3=$AWS_ENDPOINT_URL_S3"
	exit 0
fi

[[ -n "${CDKLOCAL:-}" ]] || { echo "deploy-local: set CDKLOCAL to the cdklocal command (make deploy-local does)" >&2; exit 2; }
cd "$(dirname "$0")/../infra"
[[ -d cdk.out ]] || { echo "deploy-local: no infra/cdk.out: synthesize first (make deploy-local)" >&2; exit 2; }
echo "deploy-local: LocalStack at $AWS_ENDPOINT_URL (S3 $AWS_ENDPOINT_URL_S3)"
$CDKLOCAL bootstrap --app cdk.out
$CDKLOCAL deploy --app cdk.out --all --require-approval never
