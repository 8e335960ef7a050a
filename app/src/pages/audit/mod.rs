//! `/audit`: paste a loop, get its exits and verdict at once, in the browser.
//!
//! The auditor runs in a Web Worker (see `client.rs` and
//! `auditor/wasm/audit-worker.js`, a file of the bundle) that only this page
//! starts, so the rest of the site never downloads a grammar. Without JavaScript the same page is a form
//! that posts to the server, which audits with the same engine; the server
//! also audits the opening example, so the first paint already has a report.

pub mod client;
pub mod examples;
mod report;

use std::sync::Arc;
use std::time::Duration;

use auditor::{FileReport, Language};
use leptos::html::Textarea;
use leptos::prelude::*;
use leptos::server::SharedValue;
use leptos_meta::{Meta, Title};
use serde::{Deserialize, Serialize};

use self::client::EngineEvent;
use self::examples::EXAMPLES;
use self::report::ReportView;

/// How long typing must pause before the source is audited again.
const DEBOUNCE: Duration = Duration::from_millis(80);

/// The server's auditor, handed to the page through context so that the
/// no-JavaScript path and the first paint use the same engine as the CLI.
/// Arguments: the source, and the language name (`None` detects it).
#[derive(Clone)]
pub struct ServerAuditor(pub Arc<AuditFn>);

/// Audits a source, given the language name or `None` to detect it.
pub type AuditFn = dyn Fn(&str, Option<&str>) -> FileReport + Send + Sync;

/// What a reader posted through the form when JavaScript was off.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PostedAudit {
    pub source: String,
    pub language: String,
    /// Why the post could not be audited (too large, say), if it could not.
    pub error: Option<String>,
    /// The report, when the server audited the source before rendering (off
    /// the threads that serve requests); else the page asks the
    /// [`ServerAuditor`].
    pub report: Option<Box<FileReport>>,
}

/// What the page opens with, computed on the server and handed to the
/// browser with the HTML so both render the same first view.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Opening {
    source: String,
    language: String,
    report: Option<FileReport>,
    posted: bool,
    error: Option<String>,
}

impl Opening {
    fn on_server() -> Opening {
        let posted = use_context::<PostedAudit>();
        let (source, language, error, audited) = match &posted {
            Some(posted) => {
                (posted.source.clone(), posted.language.clone(), posted.error.clone(), posted.report.clone())
            }
            None => (EXAMPLES[0].source.to_string(), "auto".to_string(), None, None),
        };
        let report = match (audited, use_context::<ServerAuditor>(), &error) {
            (_, _, Some(_)) => None,
            (Some(report), _, None) => Some(*report),
            (None, Some(auditor), None) => Some((auditor.0)(&source, language_override(&language))),
            (None, None, None) => None,
        };
        Opening { source, language, report, posted: posted.is_some(), error }
    }
}

/// `None` for automatic detection, else the language name.
fn language_override(language: &str) -> Option<&str> {
    (language != "auto" && !language.is_empty()).then_some(language)
}

/// Where the in-browser engine is.
#[derive(Debug, Clone, PartialEq)]
enum EngineState {
    /// Server-rendered, or the worker is still loading.
    Loading,
    Ready,
    Failed(String),
}

#[component]
pub fn AuditPage() -> impl IntoView {
    let opening = SharedValue::new(Opening::on_server).into_inner();
    // The language the server read the opening source as: the grammar the
    // page's early script has the worker fetch first.
    let opening_hint = opening.report.as_ref().and_then(|report| report.language.clone()).unwrap_or_default();

    // The text in the pane as the reader has it, and the text the page last
    // put there itself (an example, a file, a share link): the textarea is
    // only overwritten for the latter, so typing never fights the caret.
    let source = RwSignal::new(opening.source.clone());
    let placed = RwSignal::new(opening.source.clone());
    let language = RwSignal::new(opening.language.clone());
    let path = RwSignal::new(String::new());
    let report = RwSignal::new(opening.report.clone());
    let pending = RwSignal::new(opening.report.is_none() && opening.error.is_none());
    let engine = RwSignal::new(EngineState::Loading);
    let audit_ms = RwSignal::new(None::<f64>);
    let highlight = RwSignal::new(None::<(usize, usize)>);
    let scroll = RwSignal::new((0, 0));
    let notice = RwSignal::new(opening.error.clone());
    let share_url = RwSignal::new(None::<String>);
    let hydrated = RwSignal::new(false);
    let example_choice = RwSignal::new(String::new());

    let textarea = NodeRef::<Textarea>::new();
    let next_id = StoredValue::new(0u32);
    let latest_audit = StoredValue::new(0u32);
    let first_verdict = StoredValue::new(false);
    // (A timer's handle is a number, so it is kept in thread-safe storage:
    // a page rendered on the server may drop its values on another thread
    // than the one that made them, which local storage does not allow.)
    let timer = StoredValue::new(None::<TimeoutHandle>);

    // The reader's own source is kept in this browser across reloads (never
    // sent); an example is not worth keeping.
    let remember = move |text: &str| {
        if text.trim().is_empty() || EXAMPLES.iter().any(|example| example.source == text) {
            client::forget_source();
        } else {
            client::keep_source(text, &language.get_untracked());
        }
    };
    let audit_now = move || {
        let id = next_id.get_value() + 1;
        next_id.set_value(id);
        latest_audit.set_value(id);
        pending.set(true);
        source.with_untracked(|text| {
            remember(text);
            if text.trim().is_empty() {
                report.set(None);
                pending.set(false);
            } else {
                client::request_audit(id, text, &language.get_untracked(), &path.get_untracked());
            }
        });
    };
    let schedule_audit = move |delay: Duration| {
        if let Some(handle) = timer.get_value() {
            handle.clear();
        }
        // An audit of newer text is coming: a report on its way now is of
        // text no longer on screen (no report has the id 0).
        latest_audit.set_value(0);
        pending.set(true);
        timer.set_value(set_timeout_with_handle(audit_now, delay).ok());
    };
    let place = move |text: String, lang: String, file: String| {
        source.set(text.clone());
        placed.set(text);
        language.set(lang);
        path.set(file);
        highlight.set(None);
        share_url.set(None);
        audit_now();
    };
    let new_request = move || {
        let id = next_id.get_value() + 1;
        next_id.set_value(id);
        id
    };

    let on_event = move |event: EngineEvent| match event {
        EngineEvent::Ready { .. } => engine.set(EngineState::Ready),
        EngineEvent::Failed { message } => {
            engine.set(EngineState::Failed(message));
            pending.set(false);
        }
        EngineEvent::Report { id, json, ms } => {
            if id != latest_audit.get_value() {
                return; // a newer audit is on its way
            }
            match serde_json::from_str::<FileReport>(&json) {
                Ok(parsed) => {
                    report.set(Some(parsed));
                    audit_ms.set(Some(ms));
                    pending.set(false);
                    if !first_verdict.get_value() {
                        first_verdict.set_value(true);
                        client::mark("fixedpoint:first-verdict");
                    }
                }
                Err(error) => notice.set(Some(format!("The auditor answered something unreadable: {error}"))),
            }
        }
        EngineEvent::Rendered { format, text, .. } => match format.as_str() {
            "markdown" => client::copy_text(text, move |copied| {
                notice.set(Some(if copied {
                    "Copied the report as Markdown.".to_string()
                } else {
                    "The browser did not allow copying; use the JSON or SARIF download instead.".to_string()
                }));
            }),
            "sarif" => client::download("loop-audit.sarif", "application/sarif+json", &text),
            _ => client::download("loop-audit.json", "application/json", &text),
        },
        EngineEvent::Packed { fragment, .. } => {
            client::set_fragment(Some(&fragment));
            let url = client::url_with_fragment(&fragment);
            share_url.set(Some(url.clone()));
            client::copy_text(url, move |copied| {
                notice.set(Some(if copied {
                    "Copied the share link. The source travels in the part after #, which browsers never send to a server.".to_string()
                } else {
                    "Here is the share link. The source travels in the part after #, which browsers never send to a server.".to_string()
                }));
            });
        }
        EngineEvent::Unpacked { source: text, language: lang, .. } => {
            let lang =
                if lang == "auto" || Language::from_name(&lang).is_some() { lang } else { "auto".into() };
            place(text, lang, String::new());
        }
        EngineEvent::Error { message, .. } => {
            notice.set(Some(format!("That did not work: {message}.")));
            pending.set(false);
        }
    };

    // In the browser only: start the worker, then audit what the page shows
    // (or what a share link carries).
    //
    // What the reader typed before hydration comes first: hydration put the
    // server's text back into the pane, so the early script's copy is placed
    // again and the server's report (of the example) is dropped before it
    // can sit beside it. Then a share link, then the source this browser
    // kept, then what the server rendered.
    let rendered_source = opening.source.clone();
    // The fragment a share link carries, from the router's location: after
    // a navigation inside the site the window's address may be updated only
    // once this page is shown; the router's holds it from the start.
    let router_hash = leptos_router::hooks::use_location().hash;
    // The pane's scroll, read into the signal the gutter and the highlight
    // follow: on every scroll, and once the page is live (a paste made while
    // the page was still loading scrolled it before anyone listened).
    let sync_scroll = move || {
        if let Some(element) = textarea.get_untracked() {
            scroll.set((element.scroll_top(), element.scroll_left()));
        }
    };
    Effect::new(move |_| {
        hydrated.set(true);
        sync_scroll();
        request_animation_frame(sync_scroll);
        let early = client::early_source().filter(|text| *text != rendered_source);
        // The early script asked for the audit of the pane as it was
        // rendered: when that is still what the pane and the language say,
        // its report (perhaps already waiting) is this page's first.
        let asked_early = early.is_none()
            && !opening.posted
            && client::early_audit()
                .is_some_and(|(text, lang)| text == rendered_source && lang == language.get_untracked());
        if asked_early {
            latest_audit.set_value(client::EARLY_AUDIT_ID);
            pending.set(true);
            remember(&rendered_source);
        }
        client::start_engine(on_event);
        client::settle_early();
        if asked_early {
            return;
        }
        if let Some(text) = early {
            report.set(None);
            place(text, language.get_untracked(), String::new());
            return;
        }
        if opening.posted {
            audit_now();
            return;
        }
        let fragment = {
            let hash = router_hash.get_untracked();
            let hash = hash.trim_start_matches('#');
            (!hash.is_empty()).then(|| hash.to_string())
        };
        match (fragment, client::kept_source()) {
            (Some(fragment), _) => client::request_unpack(new_request(), &fragment),
            (None, Some((text, lang))) => {
                report.set(None);
                let lang = if Language::from_name(&lang).is_some() { lang } else { "auto".into() };
                place(text, lang, String::new());
            }
            (None, None) => audit_now(),
        }
    });
    on_cleanup(client::stop_engine);

    let line_numbers = Memo::new(move |_| source.with(|text| text.split('\n').count()));
    let gutter = move || {
        let count = line_numbers.get();
        let mut numbers = String::with_capacity(count * 5);
        for number in 1..=count {
            numbers.push_str(&number.to_string());
            numbers.push('\n');
        }
        numbers
    };
    let reveal = Callback::new(move |(start, end): (usize, usize)| {
        highlight.set(Some((start, end)));
        if let Some(element) = textarea.get() {
            source.with_untracked(|text| client::reveal_lines(&element, text, start, end));
        }
    });
    // A suggested fix, applied: the pane takes the changed source and the
    // report follows it, so the reader sees the better verdict at once.
    let apply_fix = Callback::new(move |fix: auditor::Fix| {
        let fixed = source.with_untracked(|text| fix.apply(text));
        place(fixed, language.get_untracked(), path.get_untracked());
        notice.set(Some(format!(
            "Applied the suggested {} fix; the report now reads the changed source.",
            fix.exit.as_str()
        )));
    });
    let copy_diff = Callback::new(move |diff: String| {
        client::copy_text(diff, move |copied| {
            notice.set(Some(if copied {
                "Copied the diff.".to_string()
            } else {
                "The browser did not allow copying; select the diff and copy it.".to_string()
            }));
        });
    });
    let export = move |format: &'static str| {
        let id = new_request();
        client::request_render(
            id,
            format,
            &source.get_untracked(),
            &language.get_untracked(),
            &path.get_untracked(),
        );
    };
    let detected = move || report.with(|report| report.as_ref().and_then(|r| r.language.clone()));
    let engine_ready = move || engine.get() == EngineState::Ready;

    let toolbar = view! {
                <div class="audit-toolbar">
                    <div class="field">
                        <label for="audit-language">"Language"</label>
                        <select
                            id="audit-language"
                            name="language"
                            data-testid="audit-language"
                            prop:value=move || language.get()
                            on:change=move |event| {
                                language.set(event_target_value(&event));
                                audit_now();
                            }
                        >
                            <option value="auto" selected=move || language.get() == "auto">
                                {move || match (language.get() == "auto", detected()) {
                                    (true, Some(name)) => format!("Auto: {name}"),
                                    _ => "Auto-detect".to_string(),
                                }}
                            </option>
                            {Language::ALL
                                .into_iter()
                                .map(|lang| {
                                    let name = lang.name();
                                    view! {
                                        <option value=name selected=move || language.get() == name>
                                            {name}
                                        </option>
                                    }
                                })
                                .collect_view()}
                        </select>
                    </div>
                    <div class="field">
                        <label for="audit-example">"Start from an example"</label>
                        <select
                            id="audit-example"
                            data-testid="audit-example"
                            prop:value=move || example_choice.get()
                            on:change=move |event| {
                                let slug = event_target_value(&event);
                                if let Some(example) = examples::example(&slug) {
                                    example_choice.set(slug);
                                    place(example.source.to_string(), "auto".into(), String::new());
                                }
                            }
                        >
                            <option value="">"Choose an example"</option>
                            {EXAMPLES
                                .iter()
                                .map(|example| {
                                    view! {
                                        <option value=example.slug>
                                            {format!("{} ({})", example.title, example.verdict)}
                                        </option>
                                    }
                                })
                                .collect_view()}
                        </select>
                    </div>
                    <div class="field">
                        <label for="audit-file">"Open a file"</label>
                        <input
                            id="audit-file"
                            type="file"
                            data-testid="audit-file"
                            accept=".py,.js,.mjs,.cjs,.jsx,.ts,.tsx,.sh,.bash,.go,.rs,text/*"
                            on:change=move |event| {
                                open_file(&event, move |result| match result {
                                    Ok((name, text)) => place(text, "auto".into(), name),
                                    Err(message) => notice.set(Some(message)),
                                });
                            }
                        />
                    </div>
                    <button
                        type="button"
                        class="button"
                        data-testid="audit-clear"
                        title="Empty the pane and forget the source this browser kept"
                        disabled=move || !hydrated.get()
                        on:click=move |_| {
                            example_choice.set(String::new());
                            place(String::new(), "auto".into(), String::new());
                        }
                    >
                        "Clear"
                    </button>
                    <p class="engine-status" data-testid="engine-status" role="status">
                        {move || match (hydrated.get(), engine.get(), pending.get(), audit_ms.get()) {
                            (false, _, _, _) => "Audited on the server".to_string(),
                            (true, EngineState::Loading, _, _) => "Loading the auditor…".to_string(),
                            (true, EngineState::Failed(_), _, _) => {
                                "The in-browser auditor could not load; the button audits on the server".to_string()
                            }
                            (true, EngineState::Ready, true, _) => "Auditing…".to_string(),
                            (true, EngineState::Ready, false, Some(ms)) => format!("Audited in {ms:.1} ms, in this browser"),
                            (true, EngineState::Ready, false, None) => "Ready".to_string(),
                        }}
                    </p>
                </div>

    }
    .into_any();
    let editor = view! {
                <div class="editor" class:editor-loading=move || hydrated.get() && !engine_ready()>
                    <div class="gutter-box" aria-hidden="true">
                        <pre class="gutter" style:transform=move || format!("translateY({}px)", -scroll.get().0)>
                            {gutter}
                        </pre>
                        {move || {
                            let top = scroll.get().0;
                            report.with(gutter_marks)
                                .into_iter()
                                .map(|(line, label, kind, title)| {
                                    view! {
                                        <span
                                            class=format!("gutter-mark kind-{kind}")
                                            data-line=line
                                            title=title
                                            style:top=format!("calc({} * var(--code-line) + var(--code-pad) - {top}px)", line - 1)
                                        >
                                            {label}
                                        </span>
                                    }
                                })
                                .collect_view()
                        }}
                    </div>
                    <div class="editor-body">
                        {move || {
                            highlight
                                .get()
                                .map(|(start, end)| {
                                    let (top, left) = scroll.get();
                                    view! {
                                        <div
                                            class="source-highlight"
                                            data-testid="source-highlight"
                                            data-start=start
                                            data-end=end
                                            aria-hidden="true"
                                            style:top=format!("calc({} * var(--code-line) + var(--code-pad) - {top}px)", start - 1)
                                            style:height=format!("calc({} * var(--code-line))", end + 1 - start)
                                            style:left=format!("{}px", -left.min(0))
                                        ></div>
                                    }
                                })
                        }}
                        <label for="audit-source" class="visually-hidden">"Loop source"</label>
                        <textarea
                            id="audit-source"
                            name="source"
                            data-hint=opening_hint.clone()
                            node_ref=textarea
                            data-testid="audit-source"
                            spellcheck="false"
                            autocomplete="off"
                            autocapitalize="off"
                            aria-describedby="audit-privacy"
                            prop:value=move || placed.get()
                            on:input=move |event| {
                                source.set(event_target_value(&event));
                                highlight.set(None);
                                share_url.set(None);
                                schedule_audit(DEBOUNCE);
                            }
                            on:scroll=move |_| sync_scroll()
                            on:dragover=move |event| event.prevent_default()
                            on:drop=move |event| {
                                if let Some(file) = dropped_file(&event) {
                                    event.prevent_default();
                                    client::read_file(file, move |result| match result {
                                        Ok((name, text)) => place(text, "auto".into(), name),
                                        Err(message) => notice.set(Some(message)),
                                    });
                                }
                            }
                        >
                            {textarea_text(&opening.source)}
                        </textarea>
                    </div>
                </div>
    }
    .into_any();
    let actions = view! {
            <div class="audit-actions" role="group" aria-label="Export and share">
                <button type="button" class="button" data-testid="copy-markdown" disabled=move || !engine_ready() on:click=move |_| export("markdown")>
                    "Copy as Markdown"
                </button>
                <button type="button" class="button" data-testid="download-json" disabled=move || !engine_ready() on:click=move |_| export("json")>
                    "Download JSON"
                </button>
                <button type="button" class="button" data-testid="download-sarif" disabled=move || !engine_ready() on:click=move |_| export("sarif")>
                    "Download SARIF"
                </button>
                <button
                    type="button"
                    class="button button-primary"
                    data-testid="share"
                    disabled=move || !hydrated.get()
                    on:click=move |_| {
                        let id = new_request();
                        client::request_pack(id, &source.get_untracked(), &language.get_untracked());
                    }
                >
                    "Share link"
                </button>
            </div>
            {move || {
                share_url
                    .get()
                    .map(|url| {
                        view! {
                            <p class="share-box">
                                <label for="share-url">"Share link"</label>
                                <input id="share-url" data-testid="share-url" readonly prop:value=url.clone() value=url/>
                            </p>
                        }
                    })
            }}
    }
    .into_any();

    view! {
        <Title text="Audit a loop"/>
        <Meta name="description" content="Paste an agent loop: which of eight exit conditions it implements, and whether it can tell that it has finished."/>
        <section class="audit-page">
            <header class="audit-intro">
                <h1>"Audit a loop"</h1>
                <p class="lede">
                    "Paste the source of an agent loop. The auditor reads it with tree-sitter and tells which of the "
                    <a href="/#exits-heading">"eight exits"</a>
                    " it implements, and whether it can tell that it has finished."
                </p>
                <p class="privacy" id="audit-privacy">
                    {move || {
                        if hydrated.get() && engine.get() != EngineState::Loading && !matches!(engine.get(), EngineState::Failed(_)) {
                            "It runs in your browser: the source never leaves this page."
                        } else if hydrated.get() && !matches!(engine.get(), EngineState::Failed(_)) {
                            "It runs in your browser once the auditor has loaded: the source never leaves this page."
                        } else {
                            "Without JavaScript this page is a form: auditing sends the source to this server, which audits it with the same engine and keeps nothing."
                        }
                    }}
                </p>
            </header>

            <div class="audit-layout">
            <div class="audit-work">
            // On a phone the report comes after the source: its verdict is
            // repeated first, as one line that links to the report.
            {move || {
                report
                    .with(|r| r.as_ref().filter(|r| r.language.is_some()).map(|r| r.verdict.as_str()))
                    .map(|verdict| {
                        view! {
                            <p class=format!("verdict-mini verdict-{}", verdict.to_ascii_lowercase()) data-testid="verdict-mini">
                                <span class="verdict-label">"Verdict"</span>
                                " "
                                <strong>{verdict}</strong>
                                " "
                                <a href="#report-heading">"Read the report"</a>
                            </p>
                        }
                    })
            }}
            <form
                class="audit-form"
                method="post"
                action="/audit"
                on:submit=move |event| {
                    // With the engine in the page there is nothing to send.
                    if engine_ready() {
                        event.prevent_default();
                        audit_now();
                    }
                }
            >
                {toolbar}
                {editor}
                <div class="audit-submit" class:hidden=move || hydrated.get() && !matches!(engine.get(), EngineState::Failed(_))>
                    <button type="submit" class="button" data-testid="audit-submit">"Audit on the server"</button>
                    <span>" The source is sent to this server, audited with the same engine and not kept."</span>
                </div>
            </form>
            // Right after the pane and before the report: on a slow
            // connection the report may arrive while the reader is already
            // typing, and it must not be shown beside their text.
            <script inner_html=client::EARLY_SCRIPT></script>

            {actions}
            <p class="notice" role="status" data-testid="audit-notice">{move || notice.get()}</p>
            </div>

            <div class="audit-side">
            <p id="audit-stale" class="notice stale-note" role="status">
                "Your loop is audited as soon as the page has loaded; until then the server's report, which was of the example, is hidden."
            </p>
            <ReportView report=report pending=pending reveal=reveal apply=apply_fix copy=copy_diff/>
            </div>
            </div>
        </section>
    }
}

/// The evidence lines of a report, for the gutter: each first line of a
/// piece of evidence with the exits it shows (`E1`, or `E1+` for several),
/// the kind of the first one, and their names.
fn gutter_marks(report: &Option<FileReport>) -> Vec<(usize, String, &'static str, String)> {
    let Some(report) = report.as_ref() else { return Vec::new() };
    let mut lines: std::collections::BTreeMap<usize, Vec<&auditor::ExitReport>> = Default::default();
    for exit in report.exits.iter().filter(|e| e.found) {
        for evidence in &exit.evidence {
            let at = lines.entry(evidence.start_line).or_default();
            if !at.iter().any(|e| e.id == exit.id) {
                at.push(exit);
            }
        }
    }
    lines
        .into_iter()
        .map(|(line, exits)| {
            let first = exits[0];
            let label = if exits.len() > 1 {
                format!("{}+", first.id.as_str())
            } else {
                first.id.as_str().to_string()
            };
            let title =
                exits.iter().map(|e| format!("{} {}", e.id.as_str(), e.label)).collect::<Vec<_>>().join(", ");
            (line, label, first.kind.css_class(), title)
        })
        .collect()
}

/// The source as the textarea's server-rendered content. Leptos writes a
/// textarea's children without escaping them, so a source holding
/// `</textarea><script>` would end the element and run as markup; the
/// browser decodes these entities back to the same text.
fn textarea_text(source: &str) -> String {
    source.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// Reads the file chosen in a file input.
fn open_file(event: &leptos::ev::Event, done: impl FnOnce(Result<(String, String), String>) + 'static) {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        let file = event
            .target()
            .and_then(|target| target.dyn_into::<web_sys::HtmlInputElement>().ok())
            .and_then(|input| input.files())
            .and_then(|files| files.get(0));
        if let Some(file) = file {
            client::read_file(file, done);
        }
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = (event, done);
}

/// The first file of a drop, if the drop carries files.
#[cfg(feature = "hydrate")]
fn dropped_file(event: &leptos::ev::DragEvent) -> Option<web_sys::File> {
    event.data_transfer()?.files()?.get(0)
}

#[cfg(not(feature = "hydrate"))]
fn dropped_file(_event: &leptos::ev::DragEvent) -> Option<std::convert::Infallible> {
    None
}
