//! The generated sources of the audit benchmarks, shared by `benches/audit.rs`
//! and `examples/bench_sources.rs` (which writes them out for
//! `benches/instructions.sh`).

use auditor::Language;

/// A realistic agent-loop snippet per language, repeated to about 2,000 lines.
pub fn generated(language: Language) -> String {
    let chunk = match language {
        Language::Python => "def run(client, messages):\n    turn = 0\n    while True:\n        turn += 1\n        reply = client.create(messages=messages, max_tokens=1024)  # call\n        if not reply.tool_calls:\n            return reply\n        if turn >= MAX_TURNS:\n            break\n        messages.append(f\"{reply.text} done\")\n\n",
        Language::JavaScript | Language::TypeScript | Language::Tsx => "async function run(client, messages) {\n  for (let step = 0; step < maxSteps; step++) {\n    const reply = await client.create({ messages, max_tokens: 1024 });\n    /* if (done) break; */\n    if (!reply.toolCalls.length) return reply;\n    messages.push(`${reply.text} done`);\n  }\n}\n\n",
        Language::Bash => "run() {\n  for i in $(seq 1 \"$MAX_ITER\"); do\n    claude -p \"$(cat PROMPT.md)\" > out.log\n    if grep -q DONE out.log; then\n      break\n    fi\n    [ -f STOP ] && break\n  done\n}\n\n",
        Language::Go => "func run(ctx context.Context) error {\n\tfor turn := 0; turn < maxTurns; turn++ {\n\t\tselect {\n\t\tcase <-ctx.Done():\n\t\t\treturn ctx.Err()\n\t\tdefault:\n\t\t}\n\t\tif resp.StopReason == \"end_turn\" {\n\t\t\treturn nil\n\t\t}\n\t}\n\treturn nil\n}\n\n",
        Language::Rust => "fn run(client: &Client) -> Result<()> {\n    let mut turns = 0;\n    loop {\n        let resp = client.send()?;\n        if resp.stop_reason == StopReason::EndTurn { return Ok(()); }\n        turns += 1;\n        if turns >= MAX_TURNS { break; }\n    }\n    Ok(())\n}\n\n",
    };
    let lines = chunk.lines().count();
    let mut source = if language == Language::Go { String::from("package bench\n\n") } else { String::new() };
    source.push_str(&chunk.repeat(2_000 / lines + 1));
    source
}
