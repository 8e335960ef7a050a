#!/bin/sh
trap 'echo stopping; exit 0' TERM
while :; do
  codex exec "continue the refactor" || sleep 5
done
