#!/usr/bin/env bash
while true; do
  ./agent.sh
  if git diff --quiet; then
    echo "no changes; stopping"
    break
  fi
  git commit -qam "wip"
  if [[ $SECONDS -gt 1800 ]]; then
    break
  fi
done
