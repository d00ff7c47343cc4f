#!/usr/bin/env bash
# Prints the machine facts to record beside a benchmark figure.
set -euo pipefail
echo "date:   $(date -u +%Y-%m-%dT%H:%MZ)"
echo "go:     $(go version | cut -d' ' -f3-)"
echo "cpu:    $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //') ($(nproc) cores)"
echo "memory: $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo none)"
