//! The report pane: the verdict and why, the eight exits with their
//! evidence, the loops found and the warnings. Evidence is a button that
//! reveals its lines in the source pane.

use auditor::{explain_verdict, FileReport};
use leptos::prelude::*;

#[component]
pub fn ReportView(
    report: RwSignal<Option<FileReport>>,
    pending: RwSignal<bool>,
    reveal: Callback<(usize, usize)>,
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
                        None => "Waiting for the auditor.".to_string(),
                    })
                }}
            </p>
            {table}
            {columns}
            <p class="muted small">
                "The auditor reads code; it does not run it. It follows calls to functions in the pasted source; a check in another file is not counted, and the warnings name the calls it could not follow."
            </p>
        </section>
    }
    .into_any()
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
