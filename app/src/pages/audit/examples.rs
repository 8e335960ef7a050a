//! Loops to start from on the audit page: short, written for the page, one
//! per language and verdict. Each states the verdict it should get; a server
//! test holds the auditor to it.

/// One example the page offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Example {
    /// Stable id, used as the picker's value.
    pub slug: &'static str,
    /// What the picker shows.
    pub title: &'static str,
    /// The language the example is written in (its canonical name).
    pub language: &'static str,
    /// The verdict the auditor gives it.
    pub verdict: &'static str,
    pub source: &'static str,
}

/// Every example, the first being what the page opens with.
pub const EXAMPLES: &[Example] = &[
    Example {
        slug: "python-turn-cap",
        title: "Python: a turn cap and nothing else",
        language: "python",
        verdict: "DIVERGES",
        source: r#"import anthropic

client = anthropic.Anthropic()
MAX_TURNS = 25


def run(task: str) -> str:
    messages = [{"role": "user", "content": task}]
    reply = None
    for turn in range(MAX_TURNS):
        # max_tokens bounds one reply, not the loop: it is not an exit.
        reply = client.messages.create(
            model="claude-sonnet-4-5", max_tokens=2048, messages=messages
        )
        messages.append({"role": "assistant", "content": reply.content})
        messages.append({"role": "user", "content": "Continue."})
    return reply
"#,
    },
    Example {
        slug: "python-tests-pass",
        title: "Python: stops when the tests pass",
        language: "python",
        verdict: "CONVERGES",
        source: r#"import subprocess

MAX_ITERATIONS = 12


def tests_pass() -> bool:
    return subprocess.run(["pytest", "-q"]).returncode == 0


def fix_until_green(agent):
    for iteration in range(MAX_ITERATIONS):
        if tests_pass():
            print(f"green after {iteration} iterations")
            return True
        agent.step("The test suite fails. Read the failures and fix the code.")
    return False
"#,
    },
    Example {
        slug: "javascript-no-progress",
        title: "JavaScript: notices when nothing changed",
        language: "javascript",
        verdict: "CONVERGES",
        source: r#"import { createHash } from "node:crypto";

const maxRounds = 20;

export async function refine(agent, draft) {
  let previousDigest = null;
  for (let round = 0; round < maxRounds; round++) {
    draft = await agent.revise(draft);
    const digest = createHash("sha256").update(draft).digest("hex");
    if (digest === previousDigest) {
      break; // the last revision changed nothing: a fixed point
    }
    previousDigest = digest;
  }
  return draft;
}
"#,
    },
    Example {
        slug: "typescript-deadline-budget",
        title: "TypeScript: a deadline and a budget",
        language: "typescript",
        verdict: "DIVERGES",
        source: r#"interface Step { costUsd: number; output: string }

const deadline = Date.now() + 10 * 60 * 1000;
const maxBudgetUsd = 5;

export async function research(next: () => Promise<Step>): Promise<string[]> {
  const notes: string[] = [];
  let spentUsd = 0;
  while (Date.now() < deadline) {
    const step = await next();
    spentUsd += step.costUsd;
    notes.push(step.output);
    if (spentUsd > maxBudgetUsd) {
      break;
    }
  }
  return notes;
}
"#,
    },
    Example {
        slug: "bash-forever",
        title: "Bash: runs until someone kills it",
        language: "bash",
        verdict: "UNDEFINED",
        source: r#"#!/usr/bin/env bash
# Feed the same prompt to the agent, forever.
set -u

while true; do
  claude -p "$(cat PROMPT.md)" --output-format text >> agent.log
  git add -A && git commit -qm "agent: another pass" || true
done
"#,
    },
    Example {
        slug: "bash-timeout",
        title: "Bash: a wall-clock wrapper",
        language: "bash",
        verdict: "DIVERGES",
        source: r#"#!/usr/bin/env bash
set -euo pipefail

for attempt in $(seq 1 5); do
  timeout 600 ./agent.sh --task "$1" || echo "attempt $attempt ended"
done
"#,
    },
    Example {
        slug: "go-goal-and-cancel",
        title: "Go: a goal check and a cancellation",
        language: "go",
        verdict: "CONVERGES",
        source: r#"package agent

import "context"

const maxSteps = 50

func Run(ctx context.Context, a Agent, goal Goal) error {
	for step := 0; step < maxSteps; step++ {
		select {
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		state, err := a.Step(ctx)
		if err != nil {
			return err
		}
		if goal.Reached(state) {
			return nil
		}
	}
	return ErrOutOfSteps
}
"#,
    },
    Example {
        slug: "rust-stall-counter",
        title: "Rust: a stall counter and a failure limit",
        language: "rust",
        verdict: "CONVERGES",
        source: r#"const MAX_CONSECUTIVE_FAILURES: u32 = 3;
const STALL_LIMIT: u32 = 2;

fn drive(agent: &mut Agent) -> Outcome {
    let mut failures = 0;
    let mut stalled = 0;
    let mut last_findings = usize::MAX;
    loop {
        match agent.round() {
            Ok(findings) => {
                failures = 0;
                if findings >= last_findings {
                    stalled += 1;
                } else {
                    stalled = 0;
                }
                if stalled >= STALL_LIMIT {
                    return Outcome::Stalled;
                }
                last_findings = findings;
            }
            Err(_) => {
                failures += 1;
                if failures >= MAX_CONSECUTIVE_FAILURES {
                    return Outcome::Failed;
                }
            }
        }
    }
}
"#,
    },
];

/// The example with `slug`, if there is one.
pub fn example(slug: &str) -> Option<&'static Example> {
    EXAMPLES.iter().find(|example| example.slug == slug)
}
