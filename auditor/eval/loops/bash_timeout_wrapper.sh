#!/usr/bin/env bash
# wrap with: timeout 3600 ./this.sh
MAX_RUNS=50
count=0
while true; do
  timeout 600 claude -p "next task" || echo "run timed out"
  count=$((count + 1))
  if [ "$count" -ge "$MAX_RUNS" ]; then
    exit 1
  fi
done
