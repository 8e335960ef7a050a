#!/usr/bin/env bash
attempt=1
until make check; do
  attempt=$((attempt + 1))
  if (( attempt > 8 )); then
    echo "giving up" >&2
    exit 1
  fi
  codex exec "fix the failing checks"
done
