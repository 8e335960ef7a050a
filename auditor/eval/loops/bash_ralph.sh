#!/usr/bin/env bash
set -euo pipefail

cat > PROMPT.md <<'PROMPT'
Work on the next item. When every item is done, print <promise>COMPLETE</promise>.
Rules: max_iterations=10; if done then break.
PROMPT

while true; do
  claude -p "$(cat PROMPT.md)" --dangerously-skip-permissions > out.log
  if grep -q "<promise>COMPLETE</promise>" out.log; then
    echo "all done"
    break
  fi
  [ -f .loop/STOP ] && break
done
