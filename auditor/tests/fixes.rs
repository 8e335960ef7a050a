//! Suggested fixes: each is written in the loop's language, and once applied
//! the source parses and the auditor finds the exit the fix promises without
//! losing any it had. Checked per language and over every loop of the
//! hand-written evaluation sets (the eval example does the same over the
//! real-world set).

use std::path::Path;

use auditor::{audit, detect_language, ExitId, FileReport, Language};

/// Applies every fix of `report` to `source` and checks the re-audit.
/// Returns a description of what went wrong, if anything did.
fn check_fixes(name: &str, source: &str, language: Language, report: &FileReport) -> Vec<String> {
    let mut problems = Vec::new();
    for fix in &report.fixes {
        let fixed = fix.apply(source);
        let again = audit(&fixed, None, Some(language));
        let found = again.found();
        if !found.contains(&fix.exit) {
            problems.push(format!(
                "{name}: the {0} fix is not read as {0}:\n{1}",
                fix.exit.as_str(),
                fix.diff
            ));
        }
        let lost: Vec<ExitId> = report.found().into_iter().filter(|id| !found.contains(id)).collect();
        if !lost.is_empty() {
            problems.push(format!("{name}: the {} fix loses {lost:?}:\n{}", fix.exit.as_str(), fix.diff));
        }
        let errors = |r: &FileReport| r.warnings.iter().filter(|w| w.code == "parse-error").count();
        if errors(&again) > errors(report) {
            problems.push(format!("{name}: the {} fix does not parse:\n{}", fix.exit.as_str(), fix.diff));
        }
    }
    problems
}

/// No fix offered for `source` writes `text`.
fn assert_no_fix_writes(language: Language, source: &str, text: &str) {
    let report = audit(source, None, Some(language));
    for fix in &report.fixes {
        assert!(!fix.apply(source).contains(text), "a fix writes {text:?}:\n{}", fix.diff);
    }
}

fn fix_of(language: Language, source: &str, exit: ExitId) -> (FileReport, String) {
    let report = audit(source, None, Some(language));
    let fix =
        report.fixes.iter().find(|f| f.exit == exit).unwrap_or_else(|| {
            panic!("no {} fix for\n{source}\nwarnings: {:?}", exit.as_str(), report.warnings)
        });
    let fixed = fix.apply(source);
    (report, fixed)
}

#[test]
fn a_turn_cap_for_a_loop_with_no_bound_in_each_language() {
    let cases: [(Language, &str); 6] = [
        (Language::Python, "def run(agent):\n    while True:\n        reply = agent.step()\n        if not reply.tool_calls:\n            break\n"),
        (Language::JavaScript, "async function run(agent) {\n  while (true) {\n    const reply = await agent.step();\n    if (reply.done) break;\n  }\n}\n"),
        (Language::TypeScript, "async function run(agent: Agent): Promise<void> {\n  for (;;) {\n    const reply: Reply = await agent.step();\n    if (!reply.toolCalls.length) {\n      return;\n    }\n  }\n}\n"),
        (Language::Go, "package a\n\nfunc run(a Agent) {\n\tfor {\n\t\tr := a.Step()\n\t\tif r.Finished {\n\t\t\treturn\n\t\t}\n\t}\n}\n"),
        (Language::Rust, "fn drive(agent: &mut Agent) {\n    loop {\n        let state = agent.step();\n        if state.converged {\n            break;\n        }\n    }\n}\n"),
        (Language::Bash, "#!/usr/bin/env bash\nwhile true; do\n  out=$(claude -p \"$(cat PROMPT.md)\")\n  if grep -q DONE <<<\"$out\"; then break; fi\ndone\n"),
    ];
    for (language, source) in cases {
        let (report, fixed) = fix_of(language, source, ExitId::E2);
        assert!(report.warnings.iter().any(|w| w.code == "no-backstop"), "{language}: warned");
        let again = audit(&fixed, None, Some(language));
        assert!(again.found().contains(&ExitId::E2), "{language}: capped\n{fixed}");
        assert!(again.found().contains(&ExitId::E1), "{language}: still detects\n{fixed}");
        assert!(
            !again.warnings.iter().any(|w| w.code == "no-backstop"),
            "{language}: no warning left\n{fixed}"
        );
        // The suggestion is the loop's own language: its grammar reads it.
        assert_eq!(detect_language(None, &fixed).map(|l| l == language || l.name() == "tsx"), Some(true));
    }
}

#[test]
fn a_progress_check_for_a_loop_that_only_runs_out_in_each_language() {
    let cases: [(Language, &str); 6] = [
        (Language::Python, "def run(agent, max_turns):\n    for turn in range(max_turns):\n        plan = agent.plan()\n        agent.act(plan)\n"),
        (Language::JavaScript, "async function run(agent, maxTurns) {\n  for (let turn = 0; turn < maxTurns; turn++) {\n    const plan = await agent.plan();\n    await agent.act(plan);\n  }\n}\n"),
        (Language::TypeScript, "async function run(agent: Agent, maxTurns: number): Promise<void> {\n  for (let turn = 0; turn < maxTurns; turn++) {\n    const plan: Plan = await agent.plan();\n    await agent.act(plan);\n  }\n}\n"),
        (Language::Go, "package a\n\nfunc run(a Agent) {\n\tfor i := 0; i < maxIterations; i++ {\n\t\tplan, err := a.Plan()\n\t\tif err != nil {\n\t\t\tcontinue\n\t\t}\n\t\ta.Act(plan)\n\t}\n}\n"),
        (Language::Rust, "fn drive(agent: &mut Agent) {\n    for _ in 0..MAX_TURNS {\n        let plan = agent.plan();\n        agent.act(&plan);\n    }\n}\n"),
        (Language::Bash, "for i in $(seq 1 \"$MAX_ITERATIONS\"); do\n  plan=$(claude -p \"$(cat PROMPT.md)\")\n  echo \"$plan\" >> log.md\ndone\n"),
    ];
    for (language, source) in cases {
        let (report, fixed) = fix_of(language, source, ExitId::E5);
        assert!(report.warnings.iter().any(|w| w.code == "no-completion-check"), "{language}: warned");
        let again = audit(&fixed, None, Some(language));
        assert!(again.found().contains(&ExitId::E5), "{language}: detects no progress\n{fixed}");
        assert!(again.found().contains(&ExitId::E2), "{language}: keeps its cap\n{fixed}");
        assert_eq!(again.verdict.as_str(), "CONVERGES", "{language}\n{fixed}");
    }
}

#[test]
fn a_fix_is_a_diff_of_whole_lines_with_fresh_names() {
    // `turns` is taken: the cap uses another name.
    let source = "turns = []\nwhile True:\n    reply = agent.step()\n    turns.append(reply)\n    if reply.done:\n        break\n";
    let (report, fixed) = fix_of(Language::Python, source, ExitId::E2);
    let fix = &report.fixes[0];
    assert!(fixed.contains("agent_turns += 1"), "{fixed}");
    assert!(fix.diff.starts_with("--- a\n+++ b\n@@ "), "{}", fix.diff);
    assert!(fix.diff.lines().filter(|l| l.starts_with('+') && !l.starts_with("+++")).count() >= 4);
    assert!(fix.edits.iter().all(|e| e.start_byte == e.end_byte && e.text.ends_with('\n')));
    // A loop with nothing to cap (UNDEFINED) and a bounded one get none.
    assert!(audit("while True:\n    step()\n", None, Some(Language::Python)).fixes.is_empty());
    let bounded = "for turn in range(40):\n    reply = agent.step()\n    if reply.done:\n        break\n";
    assert!(audit(bounded, None, Some(Language::Python)).fixes.is_empty());
}

#[test]
fn every_fix_over_the_hand_written_sets_re_audits_as_promised() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("eval");
    let mut problems = Vec::new();
    let mut fixes = 0;
    for folder in ["loops", "holdout"] {
        let mut entries: Vec<_> =
            std::fs::read_dir(root.join(folder)).expect("eval folder").flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let name = entry.file_name().to_string_lossy().to_string();
            let Ok(source) = std::fs::read_to_string(entry.path()) else { continue };
            let Some(language) = detect_language(Some(&name), &source) else { continue };
            let report = audit(&source, Some(&name), Some(language));
            fixes += report.fixes.len();
            problems.extend(check_fixes(&name, &source, language, &report));
        }
    }
    assert!(fixes >= 10, "only {fixes} fixes suggested over the hand-written sets");
    assert!(problems.is_empty(), "{} of {fixes} fixes fail:\n{}", problems.len(), problems.join("\n"));
}

/// The fix of `exit` for `source`, applied, checked the way the eval checks
/// it (promised exit found, none lost, no new parse error); the fixed source
/// and the fix's diff.
fn applied(language: Language, source: &str, exit: ExitId) -> (String, String) {
    let (report, fixed) = fix_of(language, source, exit);
    let problems = check_fixes("case", source, language, &report);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let diff = report.fixes.iter().find(|f| f.exit == exit).map(|f| f.diff.clone()).unwrap_or_default();
    (fixed, diff)
}

#[test]
fn a_loop_inside_a_recursion_gets_the_cap_where_its_check_is() {
    // The while loop decides; the method also calls itself for a new goal.
    let source = "class Agent:\n    def run(self, goal):\n        while True:\n            reply = self.llm(goal)\n            if reply.finished:\n                break\n        if reply.next_goal:\n            self.run(reply.next_goal)\n";
    let (fixed, _) = applied(Language::Python, source, ExitId::E2);
    assert!(
        fixed.contains(
            "        max_turns = 25\n        turns = 0\n        while True:\n            turns += 1\n"
        ),
        "{fixed}"
    );
    assert!(fixed.contains("def run(self, goal):"), "the signature stays\n{fixed}");
}

#[test]
fn a_recursion_that_counts_its_depth_is_capped_on_that_parameter() {
    let source = "async function solve(task, depth = 0) {\n  const answer = await model.ask(task);\n  if (answer.done) return answer;\n  return solve(answer.nextTask, depth + 1);\n}\n";
    let (fixed, _) = applied(Language::JavaScript, source, ExitId::E2);
    assert!(fixed.contains("  const maxDepth = 25;\n  if (depth >= maxDepth) throw new Error("), "{fixed}");
    assert!(fixed.contains("async function solve(task, depth = 0) {"), "no new parameter\n{fixed}");
}

#[test]
fn a_recursion_gets_a_turn_parameter_that_each_call_hands_on() {
    let python = "class Researcher:\n    def research(self, question, notes=None):\n        \"\"\"Ask, read, ask again.\"\"\"\n        answer = self.llm(question, notes)\n        if answer.is_final:\n            return answer\n        return self.research(answer.follow_up, notes=answer.notes)\n";
    let (fixed, _) = applied(Language::Python, python, ExitId::E2);
    assert!(fixed.contains("def research(self, question, notes=None, turns=0):"), "{fixed}");
    assert!(
        fixed.contains("self.research(answer.follow_up, notes=answer.notes, turns=turns + 1)"),
        "{fixed}"
    );
    // After the docstring; it returns a value, so the cap raises.
    assert!(fixed.contains("\"\"\"Ask, read, ask again.\"\"\"\n        max_turns = 25\n        if turns >= max_turns:\n            raise RuntimeError("), "{fixed}");

    let typescript = "export async function chat(history: Message[]): Promise<void> {\n  const reply = await client.send(history);\n  if (!reply.toolCalls.length) {\n    return;\n  }\n  await chat([...history, ...(await runTools(reply))]);\n}\n";
    let (fixed, _) = applied(Language::TypeScript, typescript, ExitId::E2);
    assert!(fixed.contains("chat(history: Message[], turns = 0): Promise<void>"), "{fixed}");
    assert!(fixed.contains("await chat([...history, ...(await runTools(reply))], turns + 1);"), "{fixed}");
    // Nothing to give back: the cap returns.
    assert!(fixed.contains("  if (turns >= maxTurns) return;\n"), "{fixed}");

    // One parameter per line, with a trailing comma: the new one gets its own line.
    let multiline = "def step(\n    agent,\n    state,\n):\n    new_state = agent.act(state)\n    if new_state.done:\n        return new_state\n    return step(\n        agent,\n        new_state,\n    )\n";
    let (fixed, _) = applied(Language::Python, multiline, ExitId::E2);
    assert!(fixed.contains("    state,\n    turns=0,\n):"), "{fixed}");
    assert!(fixed.contains("        new_state,\n        turns=turns + 1,\n    )"), "{fixed}");
}

#[test]
fn a_function_defined_inside_another_counts_its_turns_in_the_enclosing_call() {
    let typescript = "export async function handle(request: Request): Promise<void> {\n  const messages = [request.prompt];\n  const runWithTools = async (): Promise<void> => {\n    const response = await model.send(messages);\n    if (response.toolCalls.length) {\n      messages.push(...(await invoke(response.toolCalls)));\n      return runWithTools();\n    }\n  };\n  await runWithTools();\n}\n";
    let (fixed, _) = applied(Language::TypeScript, typescript, ExitId::E2);
    assert!(fixed.contains("  const maxTurns = 25;\n  let turns = 0;\n  const runWithTools = async (): Promise<void> => {\n    if (++turns > maxTurns) return;\n"), "{fixed}");

    let python = "def answer(question):\n    notes = []\n\n    def dig(query):\n        found = search(query)\n        notes.append(found)\n        if found.follow_up:\n            dig(found.follow_up)\n\n    dig(question)\n    return notes\n";
    let (fixed, _) = applied(Language::Python, python, ExitId::E2);
    assert!(fixed.contains("    max_turns = 25\n    turns = 0\n    def dig(query):\n        nonlocal turns\n        turns += 1\n        if turns > max_turns:\n            return\n"), "{fixed}");
}

#[test]
fn a_do_while_loop_and_loops_written_on_one_line_get_a_cap() {
    let do_while = "async function run(llm) {\n  let exit = false;\n  do {\n    const { toolCalls } = await llm.exec();\n    exit = toolCalls.length === 0;\n  } while (!exit);\n}\n";
    let (fixed, _) = applied(Language::JavaScript, do_while, ExitId::E2);
    assert!(fixed.contains("  do {\n    if (++turns > maxTurns) break;\n"), "{fixed}");

    let cases: [(Language, &str, &str); 6] = [
        (Language::Python, "def run(agent):\n    while not agent.done(): agent.step()\n", "    while not agent.done():\n        turns += 1\n"),
        (Language::JavaScript, "async function run(agent) {\n  let done = false;\n  while (!done) done = await agent.step();\n}\n", "  while (!done) {\n    if (++turns > maxTurns) break;\n    done = await agent.step();\n  }\n"),
        (Language::TypeScript, "function run(agent: Agent): void {\n  do { var r = agent.step(); } while (!r.done);\n}\n", "  do {\n    if (++turns > maxTurns) break;\n    var r = agent.step();\n  } while (!r.done);\n"),
        (Language::Bash, "until grep -q DONE out.txt; do claude -p \"$(cat PROMPT.md)\" > out.txt; done\n", "until grep -q DONE out.txt; do\n    turns=$((turns + 1))\n"),
        (Language::Go, "package a\n\nfunc run(a Agent) {\n\tfor !a.Done() { a.Step() }\n}\n", "\tfor !a.Done() {\n\t\tturns++\n"),
        (Language::Rust, "fn run(agent: &mut Agent) {\n    while !agent.done() { agent.step(); }\n}\n", "    while !agent.done() {\n        turns += 1;\n"),
    ];
    for (language, source, expected) in cases {
        let (fixed, diff) = applied(language, source, ExitId::E2);
        assert!(fixed.contains(expected), "{language}:\n{fixed}");
        // The one line is replaced: the diff removes it and adds the new lines.
        assert!(diff.lines().any(|l| l.starts_with('-') && !l.starts_with("---")), "{language}:\n{diff}");
    }
}

#[test]
fn a_framework_run_gets_its_own_setting() {
    let cases: [(&str, &str); 4] = [
        ("from agents import Agent, Runner\n\nagent = Agent(name=\"writer\", instructions=\"Write.\", tool_use_behavior=\"stop_on_first_tool\")\nresult = Runner.run_sync(agent, \"notes\")\n", "Runner.run_sync(agent, \"notes\", max_turns=25)"),
        ("from langgraph.graph import StateGraph, END\n\n\ndef route(state):\n    if state[\"score\"] >= 0.9:\n        return END\n    return \"draft\"\n\n\ndef build():\n    graph = StateGraph(State)\n    graph.add_node(\"draft\", draft)\n    graph.add_conditional_edges(\"draft\", route)\n    return graph.compile()\n\n\napp = build()\napp.invoke({\"topic\": \"loops\"})\n", "app.invoke({\"topic\": \"loops\"}, config={\"recursion_limit\": 25})"),
        ("from smolagents import CodeAgent\n\nagent = CodeAgent(\n    tools=[search],\n    model=model,\n    final_answer_checks=[is_cited],\n)\nagent.run(\"Who won?\")\n", "    final_answer_checks=[is_cited],\n    max_steps=25,\n)"),
        ("from crewai import Agent, Crew, Task\n\ndef review(output):\n    return output.raw.endswith(\"APPROVED\")\n\nwriter = Agent(role=\"writer\", goal=\"draft\", backstory=\"journalist\")\ncrew = Crew(agents=[writer], tasks=[Task(description=\"draft\", expected_output=\"text\", agent=writer)])\nwhile True:\n    result = crew.kickoff()\n    if review(result):\n        break\n", ""),
    ];
    for (source, expected) in cases {
        let report = audit(source, None, Some(Language::Python));
        let Some(fix) = report.fixes.iter().find(|f| f.exit == ExitId::E2) else {
            panic!("no cap for\n{source}\n{:?}", report.warnings)
        };
        let problems = check_fixes("framework", source, Language::Python, &report);
        assert!(problems.is_empty(), "{}", problems.join("\n"));
        let fixed = fix.apply(source);
        assert!(fixed.contains(expected), "{fixed}");
    }
}

#[test]
fn a_framework_run_that_only_runs_out_gets_the_framework_s_completion_check() {
    let autogen = "from autogen_agentchat.conditions import MaxMessageTermination\nfrom autogen_agentchat.teams import RoundRobinGroupChat\n\nteam = RoundRobinGroupChat([writer, critic], termination_condition=MaxMessageTermination(12))\n";
    let (fixed, _) = applied(Language::Python, autogen, ExitId::E1);
    assert!(fixed.contains("import MaxMessageTermination, TextMentionTermination\n"), "{fixed}");
    assert!(
        fixed.contains(
            "termination_condition=MaxMessageTermination(12) | TextMentionTermination(\"TERMINATE\"))"
        ),
        "{fixed}"
    );

    let langgraph = "from langgraph.graph import StateGraph\n\ngraph = StateGraph(State)\ngraph.add_node(\"agent\", call_model)\ngraph.add_node(\"tools\", run_tools)\ngraph.add_edge(\"agent\", \"tools\")\ngraph.add_edge(\"tools\", \"agent\")\ngraph.set_entry_point(\"agent\")\napp = graph.compile()\napp.invoke({\"messages\": [question]}, config={\"recursion_limit\": 40})\n";
    let (fixed, _) = applied(Language::Python, langgraph, ExitId::E1);
    assert!(fixed.starts_with("from langgraph.prebuilt import tools_condition\n"), "{fixed}");
    assert!(fixed.contains("graph.add_conditional_edges(\"agent\", tools_condition)\n"), "{fixed}");

    let ai_sdk = "import { generateText, stepCountIs } from \"ai\";\n\nexport async function ask(question: string) {\n  const { text } = await generateText({\n    model,\n    tools,\n    stopWhen: stepCountIs(8),\n    prompt: question,\n  });\n  return text;\n}\n";
    let (fixed, _) = applied(Language::TypeScript, ai_sdk, ExitId::E5);
    assert!(fixed.contains("    stopWhen: [stepCountIs(8), repeatsPreviousStep],\n"), "{fixed}");
    assert!(fixed.contains("  const repeatsPreviousStep = ({ steps }"), "{fixed}");
}

#[test]
fn a_smolagents_run_gets_a_check_of_its_final_answer() {
    // The check is defined before the code that makes the agent (with the
    // comment above it); the keyword goes on a line of its own after a
    // last argument that carries a comment.
    let source = "from smolagents import CodeAgent\n\n\n# The agent.\ndef make_agent(model):\n    return CodeAgent(\n        tools=[search],\n        model=model,\n        max_steps=30,  # room to search\n    )\n\n\nmake_agent(model).run(\"Who won?\")\n";
    let (fixed, _) = applied(Language::Python, source, ExitId::E1);
    assert!(
        fixed.contains("\n\n\ndef final_answer_is_complete(final_answer, memory, agent=None):\n"),
        "{fixed}"
    );
    assert!(fixed.contains("    return final_answer is not None and str(final_answer).strip() != \"\"\n\n\n# The agent.\ndef make_agent"), "{fixed}");
    assert!(
        fixed.contains("        max_steps=30,  # room to search\n        final_answer_checks=[final_answer_is_complete],\n    )"),
        "{fixed}"
    );
    // A name the file already uses is not taken; an agent made at the top
    // level gets the check just before it.
    let taken = "from smolagents import ToolCallingAgent\n\nfinal_answer_is_complete = False\nagent = ToolCallingAgent(tools=[search], model=model, max_steps=10)\nagent.run(\"Who won?\")\n";
    let (fixed, _) = applied(Language::Python, taken, ExitId::E1);
    assert!(fixed.contains("\ndef answer_is_complete(final_answer, memory, agent=None):\n"), "{fixed}");
    assert!(fixed.contains("max_steps=10, final_answer_checks=[answer_is_complete])"), "{fixed}");
    assert!(fixed.contains("final_answer_is_complete = False\n\n\ndef answer_is_complete("), "{fixed}");
}

#[test]
fn an_agent_method_on_the_ai_sdk_bounded_by_max_steps_gets_a_stop_condition() {
    // VoltAgent's `agent.generateText(input, options)`: `stopWhen` replaces
    // the step count, which moves into it.
    let source = "import { Agent } from \"@voltagent/core\";\nimport { tool } from \"ai\";\n\nconst agent = new Agent({ name: \"support\", instructions: \"Help.\", model, tools });\n\nconst response = await agent.generateText(\"Close ticket 7.\", {\n  userId: \"u1\",\n  maxSteps: 4,\n});\nconsole.log(response.text);\n";
    let (fixed, _) = applied(Language::TypeScript, source, ExitId::E5);
    assert!(fixed.contains("import { tool, stepCountIs } from \"ai\";\n"), "{fixed}");
    assert!(fixed.contains("  stopWhen: [stepCountIs(4), repeatsPreviousStep],\n"), "{fixed}");
    assert!(!fixed.contains("maxSteps"), "{fixed}");
    assert!(fixed.contains("const repeatsPreviousStep = ({ steps }"), "{fixed}");
    let again = audit(&fixed, None, Some(Language::TypeScript));
    assert!(again.found().contains(&ExitId::E2), "the cap is still read\n{fixed}");

    // Without an import from `ai`, one is added in the file's quotes.
    let single = "import { Agent } from '@voltagent/core';\n\nconst out = await agent.streamText('Plan the trip.', { maxSteps: 6 });\n";
    let (fixed, _) = applied(Language::JavaScript, single, ExitId::E5);
    assert!(fixed.starts_with("import { stepCountIs } from 'ai';\nimport { Agent }"), "{fixed}");

    // Decoy: the AI SDK's own `generateText` with `maxSteps` is AI SDK 4,
    // which has no `stopWhen`: no stop condition is offered.
    let v4 = "import { generateText } from \"ai\";\n\nconst { text } = await generateText({ model, tools, maxSteps: 5, prompt });\n";
    let report = audit(v4, None, Some(Language::TypeScript));
    assert!(report.warnings.iter().any(|w| w.code == "no-completion-check"), "{:?}", report.warnings);
    assert!(report.fixes.iter().all(|f| f.exit != ExitId::E5), "{:?}", report.fixes);
    let namespaced = "import * as ai from \"ai\";\n\nconst { text } = await ai.generateText({ model, tools, maxSteps: 5, prompt });\n";
    let report = audit(namespaced, None, Some(Language::TypeScript));
    assert!(report.warnings.iter().any(|w| w.code == "no-completion-check"), "{:?}", report.warnings);
    assert!(report.fixes.iter().all(|f| f.exit != ExitId::E5), "{:?}", report.fixes);
}

#[test]
fn the_agent_sdk_query_loop_gets_max_turns_in_its_options() {
    let source = "for await (const message of query({\n  prompt: task,\n  options: {\n    permissionMode: \"acceptEdits\",\n  },\n})) {\n  if (message.type === \"result\" && message.subtype === \"success\") {\n    break;\n  }\n}\n";
    let (fixed, _) = applied(Language::TypeScript, source, ExitId::E2);
    assert!(fixed.contains("    permissionMode: \"acceptEdits\",\n    maxTurns: 25,\n  },"), "{fixed}");
}

#[test]
fn walks_over_a_plan_or_an_agent_s_stream_are_capped_but_not_walks_over_a_list() {
    let plan = "def execute(planner, executor, goal):\n    plan = planner.plan(goal)\n    for step in plan.steps:\n        result = executor.step(step)\n        if result.goal_reached:\n            return result\n";
    let (fixed, _) = applied(Language::Python, plan, ExitId::E2);
    assert!(fixed.contains("    for step in plan.steps:\n        executed_steps += 1\n"), "{fixed}");

    let stream = "async def run(graph, state):\n    async for update in graph.astream(state):\n        if update[\"status\"] == \"done\":\n            return update\n";
    let (fixed, _) = applied(Language::Python, stream, ExitId::E2);
    assert!(fixed.contains("    async for update in graph.astream(state):\n        turns += 1\n"), "{fixed}");

    // A walk over names is not the agent's loop; the loop that never ends
    // by itself is the one to cap.
    let list = "def pick(agents, wanted):\n    for name in agents:\n        if name == wanted:\n            return name\n\n\ndef serve(queue):\n    while True:\n        job = queue.get()\n        handle(job)\n";
    let report = audit(list, None, Some(Language::Python));
    if let Some(fix) = report.fixes.first() {
        assert!(fix.apply(list).contains("    while True:\n        turns += 1\n"), "{}", fix.diff);
    }
    let names_only = "def pick(agents, wanted):\n    for name in agents:\n        if name == wanted:\n            return name\n";
    assert!(audit(names_only, None, Some(Language::Python)).fixes.is_empty());
}

#[test]
fn the_watched_value_is_the_pass_s_work() {
    // A tuple: its name that says it is the work.
    let tuple = "def run(agent, max_rounds):\n    for _ in range(max_rounds):\n        stop, feedback = agent.review()\n        agent.revise(feedback)\n";
    let (fixed, _) = applied(Language::Python, tuple, ExitId::E5);
    assert!(fixed.contains("if feedback == previous_feedback:"), "{fixed}");

    // The body's own statement before one in a branch of it.
    let branch = "def run(task, max_attempts):\n    for attempt in range(max_attempts):\n        if attempt == 0:\n            draft = write(task)\n        else:\n            draft = rewrite(task, notes)\n        notes = critique(draft)\n";
    let (fixed, _) = applied(Language::Python, branch, ExitId::E5);
    assert!(
        fixed.contains("        notes = critique(draft)\n        if notes == previous_notes:"),
        "{fixed}"
    );

    // A clock, a count or a history is not watched.
    let clock = "import time\n\ndef run(agent, max_turns):\n    for turn in range(max_turns):\n        started_at = time.time()\n        history = agent.history()\n        reply = agent.step()\n";
    let (fixed, _) = applied(Language::Python, clock, ExitId::E5);
    assert!(fixed.contains("if reply == previous_reply:"), "{fixed}");
    let nothing = "import time\n\ndef run(agent, max_turns):\n    for turn in range(max_turns):\n        started_at = time.time()\n        print(agent.history())\n";
    assert!(audit(nothing, None, Some(Language::Python)).fixes.is_empty());
}

#[test]
fn a_step_whose_result_is_dropped_is_kept_and_watched() {
    let python = "def loop(agent, max_turns=30):\n    for turn in range(max_turns):\n        try:\n            agent.step()\n        except KeyboardInterrupt:\n            break\n";
    let (fixed, _) = applied(Language::Python, python, ExitId::E5);
    assert!(fixed.contains("            result = agent.step()\n            if result is not None and result == previous_result:\n"), "{fixed}");

    let javascript = "async function loop(agent) {\n  for (let turn = 0; turn < MAX_TURNS; turn++) {\n    await agent.runStep();\n  }\n}\n";
    let (fixed, _) = applied(Language::JavaScript, javascript, ExitId::E5);
    assert!(fixed.contains("    const result = await agent.runStep();\n    if (result !== undefined && JSON.stringify(result) === previousResult) break;"), "{fixed}");
}

#[test]
fn a_fantasy_agent_gets_a_stop_condition_that_ends_a_repeated_step() {
    // charmbracelet/fantasy (Go): the condition is a function of the file's
    // own, defined before the declaration that makes the agent (above its
    // comment), and handed to `WithStopConditions` beside the step cap.
    let source = "package main\n\n// main asks once.\nfunc main() {\n\tagent := fantasy.NewAgent(\n\t\tmodel,\n\t\tfantasy.WithTools(search),\n\t\tfantasy.WithStopConditions(fantasy.StepCountIs(10)),\n\t)\n\tresult, err := agent.Generate(ctx, fantasy.AgentCall{Prompt: \"Find it\"})\n\tif err != nil {\n\t\tpanic(err)\n\t}\n\tfmt.Println(result.Response.Content.Text())\n}\n";
    let (fixed, diff) = applied(Language::Go, source, ExitId::E5);
    assert!(
        fixed.contains("\t\tfantasy.WithStopConditions(fantasy.StepCountIs(10), repeatsPreviousStep),\n"),
        "{fixed}"
    );
    assert!(fixed.contains("package main\n\n// repeatsPreviousStep ends the run"), "{fixed}");
    assert!(fixed.contains("func repeatsPreviousStep(steps []fantasy.StepResult) bool {\n"), "{fixed}");
    assert!(
        fixed.contains("\treturn current == previous\n}\n\n// main asks once.\nfunc main() {"),
        "{fixed}"
    );
    // The tool calls are compared by name and input, not by their ids.
    assert!(diff.contains("call.ToolName + \"(\" + call.Input + \")\\n\""), "{diff}");
    let again = audit(&fixed, None, Some(Language::Go));
    assert_eq!(again.verdict.as_str(), "CONVERGES", "{fixed}");
}

#[test]
fn an_entry_that_a_step_fills_in_is_watched_when_the_step_returns_nothing() {
    // `retry` returns nothing: what it found is in the dict it is handed,
    // read after it; the entry that says it is the work is watched.
    let source = "class Chain:\n    def retry(self, question, found) -> None:\n        found[\"api_output\"] = self.llm(question)\n        found[\"should_stop\"] = self.judge(found[\"api_output\"])\n\n    def call(self, question):\n        found = {\"api_output\": None, \"should_stop\": False}\n        count = 0\n        while count < self.retry_times:\n            self.retry(question, found)\n            self.history.append(found[\"api_output\"])\n            count += 1\n";
    let (fixed, diff) = applied(Language::Python, source, ExitId::E5);
    assert!(fixed.contains("            self.retry(question, found)\n            if found[\"api_output\"] == previous_api_output:\n                break  # nothing changed since the last round\n            previous_api_output = found[\"api_output\"]\n"), "{fixed}");
    assert!(diff.contains("+        previous_api_output = None\n         while count"), "{diff}");
    // A step declared to return nothing, with nothing it fills in read
    // after it, gets no check: keeping its `None` would never fire.
    let nothing = "class Chain:\n    def retry(self, question) -> None:\n        self.notes.append(self.llm(question))\n\n    def call(self, question):\n        for attempt in range(self.retry_times):\n            self.retry(question)\n";
    let report = audit(nothing, None, Some(Language::Python));
    assert!(report.warnings.iter().any(|w| w.code == "no-completion-check"), "{:?}", report.warnings);
    assert!(report.fixes.is_empty(), "{:?}", report.fixes);
}

#[test]
fn a_result_set_inside_a_retry_loop_is_watched_after_that_loop() {
    let source = "package a\n\nfunc (a *Agent) Run(task string) {\n\tfor a.loops < a.maxLoops {\n\t\ta.loops++\n\t\tvar response string\n\t\tfor attempt := 0; attempt < a.retryAttempts; attempt++ {\n\t\t\tresp, err := a.client.Chat(a.memory())\n\t\t\tif err == nil {\n\t\t\t\tresponse = resp\n\t\t\t\tbreak\n\t\t\t}\n\t\t\tlog.Printf(\"attempt %d failed: %v\", attempt, err)\n\t\t}\n\t\ta.remember(response)\n\t}\n}\n";
    let (fixed, _) = applied(Language::Go, source, ExitId::E5);
    assert!(fixed.contains("\t\t}\n\t\tif fmt.Sprint(response) == previousResponse {\n"), "{fixed}");
}

#[test]
fn a_rewritten_line_is_a_whole_line_replacement_in_sarif_too() {
    let source = "from agents import Agent, Runner\n\nagent = Agent(name=\"w\", instructions=\"Write.\", tool_use_behavior=\"stop_on_first_tool\")\nresult = Runner.run_sync(agent, \"notes\")\n";
    let report = audit(source, Some("run.py"), Some(Language::Python));
    let fix = report.fixes.first().expect("a fix");
    let edit = fix.edits.iter().find(|e| e.start_byte != e.end_byte).expect("a rewritten line");
    assert!(edit.text.ends_with('\n') && source[edit.start_byte..edit.end_byte].ends_with('\n'));
    assert!(fix.diff.contains("-result = Runner.run_sync(agent, \"notes\")\n+result = Runner.run_sync(agent, \"notes\", max_turns=25)\n"), "{}", fix.diff);
    let sarif = auditor::render_sarif(&auditor::Report::from(report.clone())).to_string();
    assert!(sarif.contains("\"byteOffset\""), "{sarif}");
}

#[test]
fn a_crewai_task_gets_a_guardrail_and_an_openai_agents_run_a_tool_use_behavior() {
    // CrewAI: every task of the crew gets the check, defined before the
    // first of them.
    let crew = "from crewai import Agent, Crew, Task\n\nanalyst = Agent(role=\"analyst\", goal=\"Find the cause\", backstory=\"SRE\", max_iter=15)\ntask = Task(description=\"Investigate\", expected_output=\"A report\", agent=analyst)\ncrew = Crew(agents=[analyst], tasks=[task])\ncrew.kickoff()\n";
    let (fixed, _) = applied(Language::Python, crew, ExitId::E1);
    assert!(fixed.contains("max_iter=15)\n\n\ndef output_is_complete(output):\n"), "{fixed}");
    assert!(fixed.contains("agent=analyst, guardrail=output_is_complete)"), "{fixed}");
    // The Agents SDK: the function goes before the function that makes the
    // agent, its result type is imported beside `Agent`.
    let agents = "from agents import Agent, Runner\n\n\ndef answer(question):\n    agent = Agent(name=\"helper\", instructions=\"Answer.\", tools=[lookup])\n    return Runner.run_sync(agent, question, max_turns=8).final_output\n";
    let (fixed, _) = applied(Language::Python, agents, ExitId::E1);
    assert!(fixed.starts_with("from agents import Agent, Runner, ToolsToFinalOutputResult\n\n\ndef stop_when_done(context, tool_results):\n"), "{fixed}");
    assert!(fixed.contains("tools=[lookup], tool_use_behavior=stop_when_done)"), "{fixed}");
    // An agent that already says when a tool's result ends the run gets no
    // second one.
    let decided = "from agents import Agent, Runner\n\nagent = Agent(name=\"a\", tools=[lookup], tool_use_behavior=\"stop_on_first_tool\")\nRunner.run_sync(agent, \"q\", max_turns=3)\n";
    let report = audit(decided, None, Some(Language::Python));
    assert!(report.fixes.iter().all(|f| f.exit != ExitId::E1), "{:?}", report.fixes);
}

#[test]
fn a_tanstack_ai_run_gets_its_finish_reason_beside_its_cap() {
    let source = "import { chat, maxIterations } from '@tanstack/ai'\n\nexport async function answer(messages: Message[]) {\n  return chat({\n    adapter: openaiText('gpt-5'),\n    tools: [searchTool],\n    agentLoopStrategy: maxIterations(10),\n    messages,\n  })\n}\n";
    let (fixed, _) = applied(Language::TypeScript, source, ExitId::E1);
    assert!(
        fixed.starts_with(
            "import { chat, maxIterations, combineStrategies, untilFinishReason } from '@tanstack/ai'\n"
        ),
        "{fixed}"
    );
    assert!(
        fixed.contains(
            "    agentLoopStrategy: combineStrategies([maxIterations(10), untilFinishReason(['stop'])]),\n"
        ),
        "{fixed}"
    );
    // A run that stops only on a reply cut short has no answer to stop on.
    let cut = "import { chat, maxIterations, untilFinishReason } from '@tanstack/ai'\n\nexport const run = (messages) => chat({ adapter, messages, agentLoopStrategy: untilFinishReason(['length']) })\n";
    assert!(audit(cut, None, Some(Language::JavaScript)).found().is_empty());
}

#[test]
fn names_join_an_import_written_over_lines_and_a_new_import_keeps_the_files_style() {
    // TanStack's own examples list their imports one to a line.
    let listed = "import {\n  chat,\n  maxIterations,\n  toServerSentEventsStream,\n} from '@tanstack/ai'\n\nexport function handle(messages: Message[]) {\n  return chat({ adapter, messages, agentLoopStrategy: maxIterations(10) })\n}\n";
    let (fixed, _) = applied(Language::TypeScript, listed, ExitId::E1);
    assert!(
        fixed.starts_with("import {\n  chat,\n  maxIterations,\n  toServerSentEventsStream,\n  combineStrategies,\n  untilFinishReason,\n} from '@tanstack/ai'\n"),
        "{fixed}"
    );
    // No import from the module yet: a new line in the quotes and without
    // the semicolon of the file's first import, even one written over lines.
    let other = "import {\n  chat,\n  maxIterations,\n} from './tanstack'\n\nexport const run = (messages) => chat({ adapter, messages, agentLoopStrategy: maxIterations(4) })\n";
    let (fixed, _) = applied(Language::JavaScript, other, ExitId::E1);
    assert!(
        fixed.starts_with("import { combineStrategies, untilFinishReason } from '@tanstack/ai'\nimport {\n"),
        "{fixed}"
    );
}

#[test]
fn a_snapshot_taken_before_the_round_is_not_what_is_watched() {
    // `HEAD_BEFORE` is taken at the start of each round to compare within
    // it; what the round changed is `HEAD_AFTER`.
    let source = "for i in $(seq 1 \"$MAX_ITERATIONS\"); do\n  HEAD_BEFORE=\"$(git rev-parse HEAD)\"\n  claude -p \"$PROMPT\" > \"$LOG\"\n  HEAD_AFTER=\"$(git rev-parse HEAD)\"\n  echo \"$HEAD_BEFORE -> $HEAD_AFTER\"\ndone\n";
    let (fixed, diff) = applied(Language::Bash, source, ExitId::E5);
    assert!(diff.contains("HEAD_AFTER") && !diff.contains("previous_HEAD_BEFORE"), "{diff}");
    assert!(audit(&fixed, None, Some(Language::Bash)).found().contains(&ExitId::E5), "{fixed}");
}

#[test]
fn a_repeat_check_for_a_loop_over_what_a_run_streams() {
    // Each of these loops consumes the events of a run and keeps nothing of
    // its own; the round's work is the event it is handed.
    let cases: [(Language, &str, &str); 3] = [
        (
            Language::TypeScript,
            "async function drive(loop: Loop, messages: Message[], maxTurns: number): Promise<void> {\n  let turns = 0;\n  for await (const event of loop.run(messages)) {\n    if (++turns > maxTurns) break;\n    render(event);\n  }\n}\n",
            "JSON.stringify(event) === previousEvent",
        ),
        (
            Language::Go,
            "package a\n\nfunc drive(events chan Event) {\n\tturns := 0\n\tfor ev := range events {\n\t\tturns++\n\t\tif turns > maxTurns {\n\t\t\treturn\n\t\t}\n\t\tshow(ev)\n\t}\n}\n",
            "fmt.Sprint(ev) == previousEv",
        ),
        (
            Language::Rust,
            "async fn drive(mut rx: Receiver<Event>) {\n    let mut turns = 0;\n    while let Some(event) = rx.recv().await {\n        turns += 1;\n        if turns > MAX_TURNS {\n            break;\n        }\n        handle(&event);\n    }\n}\n",
            "previous_event.as_ref() == Some(&event)",
        ),
    ];
    for (language, source, check) in cases {
        let (fixed, diff) = applied(language, source, ExitId::E5);
        assert!(fixed.contains(check), "{language}: {diff}");
        assert_eq!(audit(&fixed, None, Some(language)).verdict.as_str(), "CONVERGES", "{language}\n{fixed}");
    }
    // Python's `async for` over a team's stream: its target moves each pass.
    let python = "async def drive(team, task, max_turns):\n    turns = 0\n    async for message in team.run_stream(task=task):\n        turns += 1\n        if turns > max_turns:\n            break\n        print(message)\n";
    let (fixed, _) = applied(Language::Python, python, ExitId::E5);
    assert!(fixed.contains("        if message == previous_message:\n"), "{fixed}");
    // The warning may point at another loop of the file (a walk that sets
    // the run up): the check still goes on the loop over the run's events.
    let set_up = "package a\n\nfunc drive(registry Registry) {\n\tfor _, name := range registry.Names() {\n\t\tfmt.Println(name)\n\t}\n\tctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)\n\tdefer cancel()\n\tevents := runner.Run(ctx, task)\n\tfor ev := range events {\n\t\tshow(ev)\n\t}\n}\n";
    let (fixed, _) = applied(Language::Go, set_up, ExitId::E5);
    assert!(fixed.contains("\tfor ev := range events {\n\t\tif fmt.Sprint(ev) == previousEv {"), "{fixed}");
    // The chunks of one reply are no run's events: nothing to compare.
    let chunks = "async function show(result: Result): Promise<void> {\n  let n = 0;\n  for await (const chunk of result.textStream) {\n    if (++n > 1000) break;\n    process.stdout.write(chunk);\n  }\n}\n";
    let report = audit(chunks, None, Some(Language::TypeScript));
    assert!(report.fixes.iter().all(|f| f.exit != ExitId::E5), "{:?}", report.fixes);
}

#[test]
fn a_round_that_walks_its_workers_is_watched_after_the_walk() {
    // Python: the name the walk sets is the round's after it.
    let source = "async def run(self, task, max_rounds):\n    context = task\n    for _ in range(max_rounds):\n        for agent_id in self._workers:\n            agent = self._client.get_agent(agent_id)\n            result = await agent.execute(context)\n            if result.success:\n                context = result.content\n    return context\n";
    let (fixed, diff) = applied(Language::Python, source, ExitId::E5);
    assert!(
        fixed.contains("                context = result.content\n        if result is not None and result == previous_result:\n            break"),
        "{diff}"
    );
}

#[test]
fn review_counterexamples_of_this_sessions_fixes() {
    // A server's loop over its socket holds a bounded agent loop: the
    // check goes on the agent's turns, not on the socket.
    let server = "async def handler(websocket):\n    async for message in websocket:\n        history = [message]\n        for turn in range(MAX_TURNS):\n            reply = await llm.chat(history)\n            history.append(reply)\n        await websocket.send(history[-1].content)\n";
    let (fixed, diff) = applied(Language::Python, server, ExitId::E5);
    assert!(fixed.contains("            if reply == previous_reply:\n"), "{diff}");
    // A name set only inside a retry that may fail every time starts as
    // None, and only a value is compared.
    let retry = "async def run(llm, prompt):\n    for round in range(MAX_ROUNDS):\n        for attempt in range(3):\n            try:\n                result = await llm.complete(prompt)\n                break\n            except RateLimitError:\n                await asyncio.sleep(2 ** attempt)\n";
    let (fixed, diff) = applied(Language::Python, retry, ExitId::E5);
    assert!(fixed.contains("        result = None\n        for attempt in range(3):"), "{diff}");
    assert!(fixed.contains("if result is not None and result == previous_result:"), "{diff}");
    // The text of one reply, streamed, is no run's events.
    let text = "async def show(client, max_pieces):\n    n = 0\n    async for text in stream.text_stream:\n        n += 1\n        if n > max_pieces:\n            break\n        print(text, end=\"\")\n";
    let report = audit(text, None, Some(Language::Python));
    assert!(report.fixes.iter().all(|f| f.exit != ExitId::E5), "{:?}", report.fixes);
}

#[test]
fn a_rust_pass_that_matches_its_result_is_watched_in_the_arm_that_got_through() {
    let source = "fn autopilot(engine: &Engine) -> String {\n    let mut failures = 0;\n    let stop_reason = loop {\n        if failures >= 3 {\n            break \"max_failures\".to_string();\n        }\n        match engine.chat(\"go on\") {\n            Ok(output) => {\n                failures = 0;\n                println!(\"{output}\");\n            }\n            Err(err) => {\n                failures += 1;\n                eprintln!(\"{err}\");\n            }\n        }\n    };\n    stop_reason\n}\n";
    let (report, fixed) = fix_of(Language::Rust, source, ExitId::E5);
    assert!(check_fixes("rust match", source, Language::Rust, &report).is_empty());
    // First thing in the arm, and the loop's value keeps its shape.
    assert!(fixed.contains("            Ok(output) => {\n                if previous_output.as_ref() == Some(&output) {\n                    break \"no_progress\".to_string();"), "{fixed}");
    assert!(fixed.contains("    let mut previous_output = None;\n    let stop_reason = loop {"), "{fixed}");
}

#[test]
fn a_flag_of_whether_anything_worked_this_round_ends_the_loop() {
    // Go: a swarm's round in which no agent did any work (goal met).
    let swarm = "package a\n\nfunc (s *Swarm) Run(ctx context.Context) {\n\tfor round := 0; round < s.maxRounds; round++ {\n\t\tselect {\n\t\tcase <-ctx.Done():\n\t\t\treturn\n\t\tdefault:\n\t\t}\n\t\tanyWork := false\n\t\tfor _, agent := range s.agents {\n\t\t\tif s.step(ctx, agent) {\n\t\t\t\tanyWork = true\n\t\t\t}\n\t\t}\n\t\ttime.Sleep(time.Second)\n\t}\n}\n";
    let (report, fixed) = fix_of(Language::Go, swarm, ExitId::E1);
    assert!(check_fixes("swarm", swarm, Language::Go, &report).is_empty());
    assert!(
        fixed.contains(
            "\t\t}\n\t\tif !anyWork {\n\t\t\tbreak // nothing worked this round\n\t\t}\n\t\ttime.Sleep"
        ),
        "{fixed}"
    );
    // Python: a round that changed nothing (no progress).
    let rounds = "def polish(agent, sections):\n    for round in range(10):\n        changed = False\n        for section in sections:\n            if agent.improve(section):\n                changed = True\n        agent.save(sections)\n";
    let (report, fixed) = fix_of(Language::Python, rounds, ExitId::E5);
    assert!(check_fixes("rounds", rounds, Language::Python, &report).is_empty());
    assert!(fixed.contains("                changed = True\n        if not changed:\n            break  # nothing changed this round\n"), "{fixed}");
}

#[test]
fn a_team_run_inside_a_persons_loop_gets_the_frameworks_completion_check() {
    // The warning names the loop that reads what the person types; the
    // check that the work is done belongs to the team it runs.
    let source = "from autogen_agentchat.agents import AssistantAgent\nfrom autogen_agentchat.teams import RoundRobinGroupChat\n\n\nasync def main(client):\n    writer = AssistantAgent(\n        name=\"writer\",\n        model_client=client,\n    )\n    critic = AssistantAgent(\n        name=\"critic\",\n        model_client=client,\n    )\n    team = RoundRobinGroupChat(\n        [writer, critic],\n        max_turns=3\n    )\n    while True:\n        task = input(\"> \")\n        if task == \"exit\":\n            break\n        await Console(team.run_stream(task=task))\n";
    let (report, fixed) = fix_of(Language::Python, source, ExitId::E1);
    assert!(check_fixes("team", source, Language::Python, &report).is_empty());
    assert!(fixed.contains("termination_condition="), "{fixed}");
}

#[test]
fn a_rust_loop_leaves_with_a_value_of_its_breaks_shape_or_gets_no_check() {
    // A loop a function returns takes a value as much as one that is bound.
    let returned = "fn run(agent: &mut Agent) -> String {\n    let mut turns = 0;\n    loop {\n        turns += 1;\n        if turns > 20 {\n            break \"max_turns\".to_string();\n        }\n        let reply = agent.step();\n        println!(\"{reply}\");\n    }\n}\n";
    let (_, fixed) = fix_of(Language::Rust, returned, ExitId::E5);
    assert!(fixed.contains("break \"no_progress\".to_string(); //"), "{fixed}");
    // A value made with arguments has no text that could stand for it.
    let formatted = "fn run(agent: &mut Agent) -> String {\n    let mut turns = 0;\n    let reason = loop {\n        turns += 1;\n        if turns > 20 {\n            break format!(\"stopped after {} turns\", turns);\n        }\n        let reply = agent.step();\n        println!(\"{reply}\");\n    };\n    reason\n}\n";
    assert_no_fix_writes(Language::Rust, formatted, "format!(\"no_progress\"");
    // The cap of a loop with no bound leaves with a value too.
    let capless = "fn run(agent: &mut Agent) -> String {\n    let reason = loop {\n        let reply = agent.step();\n        if reply.done {\n            break \"done\".to_string();\n        }\n    };\n    reason\n}\n";
    let (_, fixed) = fix_of(Language::Rust, capless, ExitId::E2);
    assert!(fixed.contains("break \"max_turns\".to_string();"), "{fixed}");
    // A field matched each pass is not what the pass made.
    let field = "fn run(agent: &mut Agent) {\n    let mut turns = 0;\n    loop {\n        turns += 1;\n        if turns > 10 {\n            break;\n        }\n        match agent.current {\n            Some(step) => {\n                agent.apply(step);\n            }\n            None => {}\n        }\n    }\n}\n";
    assert_no_fix_writes(Language::Rust, field, "Some(&step)");
}

#[test]
fn a_flag_raised_elsewhere_or_saying_the_opposite_is_not_the_rounds_work() {
    // Raised in a goroutine: the pass reads it before any has run.
    let goroutines = "package a\n\nfunc run(agents []*Agent, maxRounds int) {\n\tfor round := 0; round < maxRounds; round++ {\n\t\tanyWork := false\n\t\tvar wg sync.WaitGroup\n\t\tfor _, a := range agents {\n\t\t\twg.Add(1)\n\t\t\tgo func(a *Agent) {\n\t\t\t\tdefer wg.Done()\n\t\t\t\tif a.Step() {\n\t\t\t\t\tanyWork = true\n\t\t\t\t}\n\t\t\t}(a)\n\t\t}\n\t\twg.Wait()\n\t}\n}\n";
    assert_no_fix_writes(Language::Go, goroutines, "if !anyWork");
    // A function called where it stands (to recover from a panic) runs in the pass.
    let recovered = goroutines
        .replace("\t\t\twg.Add(1)\n\t\t\tgo func(a *Agent) {", "\t\t\twg.Add(1)\n\t\t\tfunc(a *Agent) {");
    let (_, fixed) = fix_of(Language::Go, &recovered, ExitId::E1);
    assert!(
        fixed.contains(
            "\t\t}\n\t\tif !anyWork {\n\t\t\tbreak // nothing worked this round\n\t\t}\n\t\twg.Wait()"
        ),
        "{fixed}"
    );
    // A flag raised when the work stopped is not one raised when it moved.
    let stalled = "async function run(agent, sections) {\n  for (let round = 0; round < 10; round++) {\n    let progressStalled = false;\n    for (const s of sections) {\n      if (!(await agent.improve(s))) {\n        progressStalled = true;\n      }\n    }\n    await agent.save(sections);\n  }\n}\n";
    assert_no_fix_writes(Language::JavaScript, stalled, "if (!progressStalled)");
    // A flag of change is read as it is, not compared with the last round's.
    let changes = "def polish(agent, sections):\n    for round in range(10):\n        changes = False\n        for s in sections:\n            if agent.improve(s):\n                changes = True\n        agent.save(sections)\n";
    let (_, fixed) = fix_of(Language::Python, changes, ExitId::E5);
    assert!(fixed.contains("        if not changes:\n            break"), "{fixed}");
}

#[test]
fn a_framework_run_outside_the_warnings_loop_gets_no_cap() {
    // The worklist grows; a turn cap on the run inside it bounds the run,
    // not the list.
    let source = "from agents import Agent, Runner\n\n\ndef run(agent, task):\n    todo = [task]\n    for item in todo:\n        r = Runner.run_sync(agent, item)\n        if r.final_output == \"DONE\":\n            break\n        todo.extend(r.new_items)\n";
    assert_no_fix_writes(Language::Python, source, "max_turns");
}
