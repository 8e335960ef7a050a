#!/usr/bin/env bash
# Runs the agent until the tracker says there is nothing left.
while [ -n "$(./tracker next)" ]; do
  ./agent run "$(./tracker next)"
  if [ -e "$HOME/.agent-kill" ]; then
    echo "kill switch"
    exit 0
  fi
done
