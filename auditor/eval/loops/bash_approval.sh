#!/usr/bin/env bash
trap 'echo interrupted; exit 130' INT
while true; do
  ./plan.sh > plan.txt
  cat plan.txt
  read -r -p "apply? [y/n] " reply
  if [[ "$reply" != "y" ]]; then
    break
  fi
  ./apply.sh plan.txt
done
