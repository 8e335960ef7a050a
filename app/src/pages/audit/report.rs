//! The report pane: the verdict and why, the eight exits with their
//! evidence, the loops found and the warnings. Evidence is a button that
//! reveals its lines in the source pane.

use auditor::{explain_verdict, FileReport, Fix};
use leptos::prelude::*;

#[component]
pub fn ReportView(
    report: RwSignal<Option<FileReport>>,
    pending: RwSignal<bool>,
    reveal: Callback<(usize, usize)>,
    /// Applies a suggested fix to the source in the pane.
    apply: Callback<Fix>,
    /// Copies a suggested fix's diff.
    copy: Callback<String>,
) -> impl IntoView {
    // A source whose language the auditor could not recognise has no
    // verdict: it was never parsed, and UNDEFINED would be a claim about it.
    let unrecognised = move || report.with(|report| report.as_ref().is_some_and(|r| r.language.is_none()));
    let verdict = move || {
        report.with(|report| report.as_ref().filter(|r| r.language.is_some()).map(|r| r.verdict.as_str()))
    };
    let table = view! {
            <table class="exits-table">
                <caption class="visually-hidden">"The eight exits and the evidence for each"</caption>
                <thead>
                    <tr>
                        <th scope="col">"Exit"</th>
                        <th scope="col">"Kind"</th>
                        <th scope="col">"Found"</th>
                        <th scope="col">"Evidence"</th>
                    </tr>
                </thead>
                <tbody>
                    {auditor::ExitId::ALL
                        .into_iter()
                        .map(|id| {
                            let exit = move || report.with(|r| r.as_ref().and_then(|r| r.exit(id).cloned()));
                            let found = move || exit().map(|e| e.found).unwrap_or(false);
                            view! {
                                <tr
                                    data-testid=format!("exit-{}", id.as_str())
                                    data-found=move || found().to_string()
                                    class:found=found
                                >
                                    <th scope="row">
                                        <span class="chip-id">{id.as_str()}</span>
                                        " "
                                        {id.label()}
                                    </th>
                                    <td>
                                        <span class=format!("kind-badge kind-{}", id.kind().css_class())>
                                            {id.kind().as_str()}
                                        </span>
                                    </td>
                                    <td class="found-cell">{move || if found() { "yes" } else { "no" }}</td>
                                    <td class="evidence-cell">
                                        {move || {
                                            exit()
                                                .map(|exit| {
                                                    exit.evidence
                                                        .into_iter()
                                                        .enumerate()
                                                        .map(|(index, evidence)| {
                                                            let (start, end) = (evidence.start_line, evidence.end_line);
                                                            view! {
                                                                <button
                                                                    type="button"
                                                                    class="evidence"
                                                                    data-testid=format!("evidence-{}-{index}", id.as_str())
                                                                    title="Show these lines in the source"
                                                                    on:click=move |_| reveal.run((start, end))
                                                                >
                                                                    <span class="line-ref">{line_range(start, end)}</span>
                                                                    <code>{first_line(&evidence.code)}</code>
                                                                </button>
                                                            }
                                                        })
                                                        .collect_view()
                                                })
                                        }}
                                    </td>
                                </tr>
                            }
                        })
                        .collect_view()}
                </tbody>
            </table>
    }
    .into_any();
    let columns = view! {
            <div class="report-columns">
                <section aria-labelledby="loops-heading">
                    <h3 id="loops-heading">"Loops found"</h3>
                    {move || {
                        let loops = report.with(|r| r.as_ref().map(|r| r.loops.clone()).unwrap_or_default());
                        if loops.is_empty() {
                            view! { <p class="muted" data-testid="no-loops">"None."</p> }.into_any()
                        } else {
                            view! {
                                <ul class="loop-list" data-testid="loops">
                                    {loops
                                        .into_iter()
                                        .map(|found| {
                                            let (start, end) = (found.start_line, found.end_line);
                                            view! {
                                                <li>
                                                    <button type="button" class="evidence" on:click=move |_| reveal.run((start, end))>
                                                        <span class="line-ref">{line_range(start, end)}</span>
                                                        " "
                                                        <span class="loop-kind">{found.framework.clone().unwrap_or(found.kind.clone())}</span>
                                                        <code>{found.code.clone()}</code>
                                                    </button>
                                                </li>
                                            }
                                        })
                                        .collect_view()}
                                </ul>
                            }
                                .into_any()
                        }
                    }}
                </section>
                <section aria-labelledby="warnings-heading">
                    <h3 id="warnings-heading">"Warnings"</h3>
                    {move || {
                        let warnings = report.with(|r| r.as_ref().map(|r| r.warnings.clone()).unwrap_or_default());
                        if warnings.is_empty() {
                            view! { <p class="muted">"None."</p> }.into_any()
                        } else {
                            view! {
                                <ul class="warning-list" data-testid="warnings">
                                    {warnings
                                        .into_iter()
                                        .map(|warning| {
                                            let lines = warning.start_line.map(|start| (start, warning.end_line.unwrap_or(start)));
                                            view! {
                                                <li>
                                                    {lines
                                                        .map(|(start, end)| {
                                                            view! {
                                                                <button type="button" class="evidence" on:click=move |_| reveal.run((start, end))>
                                                                    <span class="line-ref">{line_range(start, end)}</span>
                                                                </button>
                                                            }
                                                        })}
                                                    " "
                                                    <span>{warning.message.clone()}</span>
                                                    " "
                                                    <code class="muted">{warning.code.clone()}</code>
                                                </li>
                                            }
                                        })
                                        .collect_view()}
                                </ul>
                            }
                                .into_any()
                        }
                    }}
                </section>
            </div>
    }
    .into_any();
    let fixes = move || {
        let fixes = report.with(|r| r.as_ref().map(|r| r.fixes.clone()).unwrap_or_default());
        (!fixes.is_empty()).then(|| {
            view! {
                <section class="fixes" aria-labelledby="fixes-heading" data-testid="fixes">
                    <h3 id="fixes-heading">"Suggested fixes"</h3>
                    {fixes
                        .into_iter()
                        .map(|fix| {
                            let id = fix.exit.as_str();
                            let diff = fix.diff.clone();
                            let to_apply = fix.clone();
                            view! {
                                <article class="fix" data-testid=format!("fix-{id}")>
                                    <p class="fix-title">
                                        <span class="chip-id">{id}</span>
                                        " "
                                        {fix.title.clone()}
                                        " "
                                        <button type="button" class="evidence" on:click=move |_| reveal.run((fix.line, fix.line))>
                                            <span class="line-ref">{format!("L{}", fix.line)}</span>
                                        </button>
                                    </p>
                                    <pre class="diff" tabindex="0" aria-label=format!("The change that adds {id}, as a diff")>
                                        <code>
                                            {diff_lines(&fix.diff)
                                                .into_iter()
                                                .map(|(class, line)| view! { <span class=class>{line}</span> })
                                                .collect_view()}
                                        </code>
                                    </pre>
                                    <p class="fix-actions">
                                        <button type="button" class="button" data-testid=format!("fix-copy-{id}") on:click=move |_| copy.run(diff.clone())>
                                            "Copy the diff"
                                        </button>
                                        <button type="button" class="button" data-testid=format!("fix-apply-{id}") on:click=move |_| apply.run(to_apply.clone())>
                                            "Apply to the source"
                                        </button>
                                    </p>
                                </article>
                            }
                        })
                        .collect_view()}
                </section>
            }
        })
    };
    view! {
        <section class="audit-report" aria-labelledby="report-heading" aria-busy=move || pending.get().to_string()>
            <h2 id="report-heading" class="visually-hidden">"Report"</h2>
            <div
                class=move || format!("verdict verdict-{}", verdict().unwrap_or("none").to_ascii_lowercase())
                data-testid="audit-verdict"
                data-pending=move || pending.get().to_string()
                aria-live="polite"
            >
                <span class="verdict-label">"Verdict"</span>
                <strong class="verdict-word">
                    {move || if unrecognised() { "Which language?" } else { verdict().unwrap_or("…") }}
                </strong>
            </div>
            <p class="verdict-why" data-testid="audit-why">
                {move || {
                    report.with(|report| match report.as_ref() {
                        Some(report) if report.language.is_none() => {
                            "The auditor could not tell which language this is, so it has not read it. Choose the language above and it will."
                                .to_string()
                        }
                        Some(report) => explain_verdict(report),
                        None if pending.get() => "Waiting for the auditor.".to_string(),
                        None => "Paste a loop, open a file or choose an example, and the report appears here.".to_string(),
                    })
                }}
            </p>
            {table}
            {fixes}
            {columns}
            <p class="muted small">
                "The auditor reads code; it does not run it. It follows calls to functions in the pasted source; a check in another file is not counted, and the warnings name the calls it could not follow."
            </p>
        </section>
    }
    .into_any()
}

/// The lines of a unified diff with the class that colours each: added,
/// removed, a hunk header or context.
fn diff_lines(diff: &str) -> Vec<(&'static str, String)> {
    diff.lines()
        .map(|line| {
            let class = if line.starts_with("+++") || line.starts_with("---") {
                "diff-file"
            } else if line.starts_with('+') {
                "diff-add"
            } else if line.starts_with('-') {
                "diff-del"
            } else if line.starts_with("@@") {
                "diff-hunk"
            } else {
                "diff-ctx"
            };
            (class, format!("{line}\n"))
        })
        .collect()
}

fn line_range(start: usize, end: usize) -> String {
    if start == end {
        format!("L{start}")
    } else {
        format!("L{start}–{end}")
    }
}

fn first_line(code: &str) -> String {
    let mut lines = code.lines();
    let first = lines.next().unwrap_or("").to_string();
    if lines.next().is_some() {
        format!("{first} …")
    } else {
        first
    }
}
