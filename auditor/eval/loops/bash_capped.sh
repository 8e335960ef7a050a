#!/bin/bash
MAX_ITER=20
for i in $(seq 1 "$MAX_ITER"); do
  echo "iteration $i"
  aider --yes --message-file task.md
  if npm test; then
    echo "tests pass"
    break
  fi
done
