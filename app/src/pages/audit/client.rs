//! The audit page's reach into the browser: the auditor's worker, the URL
//! fragment, the clipboard, downloads and the source pane. Only the hydrated
//! page does any of this; on the server every function is a no-op, so the
//! page's components compile and render the same on both sides.

/// The window property where the page's early script keeps what was typed
/// before hydration.
pub const EARLY_KEY: &str = "__fixedpointEarlySource";

/// The local-storage key of the kept source.
pub const KEPT_KEY: &str = "fixedpoint:audit-source";

/// Runs as soon as the page is parsed, long before the application
/// hydrates: it keeps what the reader types or pastes into the source pane
/// (hydration would otherwise put the server's text back) and marks the
/// server's report as belonging to the example, not to the text on screen.
/// It also starts the auditor's worker, so that the grammar of the opening
/// source (`data-hint`, the language the server read it as) is fetched and
/// compiled while the application loads; the worker's messages wait in
/// `early` until [`start_engine`] takes the worker over. A share link's
/// language, or a source kept from an earlier visit, overrides the hint (a
/// kept source is of no language known here: nothing is fetched for it).
///
/// When the page will audit exactly what the pane holds now (no share link,
/// no kept source, nothing typed yet), the script asks for that audit at
/// once, as [`EARLY_AUDIT_ID`], and notes the source and language it asked
/// about: the verdict is then ready when the page hydrates, and the page
/// takes it only if the pane and the language still say the same
/// ([`early_audit`]).
pub const EARLY_SCRIPT: &str = "(function(){var t=document.getElementById('audit-source');if(!t)return;\
function keep(){if(window.__fixedpointEarlyDone)return;window.__fixedpointEarlySource=t.value;\
var r=document.querySelector('.audit-page');if(r)r.setAttribute('data-stale','');}\
t.addEventListener('input',keep);if(t.value!==t.defaultValue)keep();\
try{var p=document.documentElement.getAttribute('data-pkg');if(p===null||!window.Worker)return;\
var w=new Worker(p+'/audit-worker.js',{type:'module'}),q=[];w.onmessage=function(e){q.push(e.data);};\
window.__fixedpointWorker={worker:w,early:q};var h=t.getAttribute('data-hint'),m=/^#v1\\.([a-z]+)\\./.exec(location.hash);\
var l=document.getElementById('audit-language'),k=localStorage.getItem('fixedpoint:audit-source');\
if(!m&&!k&&l&&t.value===t.defaultValue&&t.value.trim()){window.__fixedpointWorker.audit={source:t.value,language:l.value};\
w.postMessage({type:'audit',id:4294967295,source:t.value,language:l.value,path:'',hint:h||''});return;}\
if(m)h=m[1];else if(k)h=null;if(h)w.postMessage({type:'warm',hint:h});}catch(e){}})();";

/// The id of the audit the early script asks for (no id the page gives
/// reaches it).
pub const EARLY_AUDIT_ID: u32 = u32::MAX;

/// What the worker says back.
#[derive(Debug, Clone, PartialEq)]
pub enum EngineEvent {
    /// The auditor module is loaded and compiled, `ms` after the worker started.
    Ready { ms: f64 },
    /// The module could not be loaded; the page falls back to the server form.
    Failed { message: String },
    /// A report (the JSON of one file) for the audit request `id`.
    Report { id: u32, json: String, ms: f64 },
    /// An export (`markdown`, `sarif` or `json`) for request `id`.
    Rendered { id: u32, format: String, text: String },
    /// A share-link fragment.
    Packed { id: u32, fragment: String },
    /// A source restored from a share link.
    Unpacked { id: u32, source: String, language: String },
    /// A request failed (a broken share link, say).
    Error { id: u32, message: String },
}

#[cfg(feature = "hydrate")]
pub use browser::*;
#[cfg(not(feature = "hydrate"))]
pub use server_side::*;

#[cfg(feature = "hydrate")]
mod browser {
    use std::cell::RefCell;

    use js_sys::{Object, Reflect};
    use wasm_bindgen::prelude::*;
    use wasm_bindgen::JsCast;
    use web_sys::{MessageEvent, Worker, WorkerOptions, WorkerType};

    use super::EngineEvent;

    thread_local! {
        static WORKER: RefCell<Option<Worker>> = const { RefCell::new(None) };
    }

    /// Starts the auditor's worker (once per page) and hands every message
    /// it sends to `on_event`.
    pub fn start_engine(on_event: impl Fn(EngineEvent) + 'static) {
        // The page's early script started it (and kept what it said so far)
        // unless this page was reached by the router.
        let (worker, early) = match take_early_worker() {
            Some(started) => started,
            None => {
                let options = WorkerOptions::new();
                options.set_type(WorkerType::Module);
                // The worker is a file of the bundle: the build's own, next
                // to the auditor's modules it loads.
                let url = format!("{}/audit-worker.js", crate::bundle_path());
                match Worker::new_with_options(&url, &options) {
                    Ok(worker) => (worker, js_sys::Array::new()),
                    Err(error) => {
                        on_event(EngineEvent::Failed { message: format!("{error:?}") });
                        return;
                    }
                }
            }
        };
        for message in early.iter() {
            if let Some(parsed) = parse_event(&message) {
                on_event(parsed);
            }
        }
        let on_message = Closure::<dyn Fn(MessageEvent)>::new(move |event: MessageEvent| {
            if let Some(parsed) = parse_event(&event.data()) {
                on_event(parsed);
            }
        });
        worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        // The page lives as long as the worker; the handler must too.
        on_message.forget();
        WORKER.with(|slot| *slot.borrow_mut() = Some(worker));
    }

    /// The source and language the early script asked the worker to audit
    /// as [`super::EARLY_AUDIT_ID`], if it did; read before
    /// [`start_engine`] takes the worker over.
    pub fn early_audit() -> Option<(String, String)> {
        let window = web_sys::window()?;
        let started = Reflect::get(&window, &JsValue::from_str("__fixedpointWorker")).ok()?;
        let audit =
            Reflect::get(&started, &JsValue::from_str("audit")).ok().filter(|value| value.is_object())?;
        let field = |name: &str| Reflect::get(&audit, &JsValue::from_str(name)).ok()?.as_string();
        Some((field("source")?, field("language")?))
    }

    /// The worker the early script started and the messages it sent before
    /// the page listened, taken once (a second visit of the page in the same
    /// document starts its own).
    fn take_early_worker() -> Option<(Worker, js_sys::Array)> {
        let window = web_sys::window()?;
        let key = JsValue::from_str("__fixedpointWorker");
        let started = Reflect::get(&window, &key).ok().filter(|value| value.is_object())?;
        let _ = Reflect::delete_property(&window, &key);
        let worker = Reflect::get(&started, &JsValue::from_str("worker")).ok()?.dyn_into::<Worker>().ok()?;
        let early =
            Reflect::get(&started, &JsValue::from_str("early")).ok()?.dyn_into::<js_sys::Array>().ok()?;
        Some((worker, early))
    }

    /// Ends the worker when the page is left.
    pub fn stop_engine() {
        WORKER.with(|slot| {
            if let Some(worker) = slot.borrow_mut().take() {
                worker.terminate();
            }
        });
    }

    pub fn request_audit(id: u32, source: &str, language: &str, path: &str) {
        post(&[
            ("type", "audit".into()),
            ("id", id.into()),
            ("source", source.into()),
            ("language", language.into()),
            ("path", path.into()),
            ("hint", hint(source, language, path).into()),
        ]);
    }

    pub fn request_render(id: u32, format: &str, source: &str, language: &str, path: &str) {
        post(&[
            ("type", "render".into()),
            ("id", id.into()),
            ("format", format.into()),
            ("source", source.into()),
            ("language", language.into()),
            ("path", path.into()),
            ("hint", hint(source, language, path).into()),
        ]);
    }

    /// Which grammar the worker fetches first: the language chosen, else the
    /// one the paste's path, shebang or lines say it most likely is. Only a
    /// hint: the worker's grammars decide, and fetch the others when they
    /// cannot.
    fn hint(source: &str, language: &str, path: &str) -> &'static str {
        auditor::Language::from_name(language)
            .or_else(|| auditor::likely_language((!path.is_empty()).then_some(path), source))
            .map_or("", auditor::Language::name)
    }

    pub fn request_pack(id: u32, source: &str, language: &str) {
        post(&[
            ("type", "pack".into()),
            ("id", id.into()),
            ("source", source.into()),
            ("language", language.into()),
        ]);
    }

    pub fn request_unpack(id: u32, fragment: &str) {
        post(&[("type", "unpack".into()), ("id", id.into()), ("fragment", fragment.into())]);
    }

    fn post(fields: &[(&str, JsValue)]) {
        let message = Object::new();
        for (key, value) in fields {
            let _ = Reflect::set(&message, &JsValue::from_str(key), value);
        }
        WORKER.with(|slot| {
            if let Some(worker) = slot.borrow().as_ref() {
                let _ = worker.post_message(&message);
            }
        });
    }

    fn parse_event(data: &JsValue) -> Option<EngineEvent> {
        let text = |key: &str| Reflect::get(data, &JsValue::from_str(key)).ok().and_then(|v| v.as_string());
        let number = |key: &str| Reflect::get(data, &JsValue::from_str(key)).ok().and_then(|v| v.as_f64());
        let id = || number("id").unwrap_or(0.0) as u32;
        Some(match text("type")?.as_str() {
            "ready" => EngineEvent::Ready { ms: number("ms").unwrap_or(0.0) },
            "failed" => EngineEvent::Failed { message: text("message").unwrap_or_default() },
            "report" => {
                EngineEvent::Report { id: id(), json: text("json")?, ms: number("ms").unwrap_or(0.0) }
            }
            "rendered" => EngineEvent::Rendered { id: id(), format: text("format")?, text: text("text")? },
            "packed" => EngineEvent::Packed { id: id(), fragment: text("fragment")? },
            "unpacked" => {
                EngineEvent::Unpacked { id: id(), source: text("source")?, language: text("language")? }
            }
            "error" => EngineEvent::Error { id: id(), message: text("message").unwrap_or_default() },
            _ => return None,
        })
    }

    /// Replaces the fragment without adding a history entry (or clears it).
    pub fn set_fragment(fragment: Option<&str>) {
        let Some(window) = web_sys::window() else { return };
        let Ok(history) = window.history() else { return };
        let location = window.location();
        let base =
            format!("{}{}", location.pathname().unwrap_or_default(), location.search().unwrap_or_default());
        let url = match fragment {
            Some(fragment) => format!("{base}#{fragment}"),
            None => base,
        };
        let _ = history.replace_state_with_url(&JsValue::NULL, "", Some(&url));
    }

    /// The whole page URL with `fragment`, for the share box.
    pub fn url_with_fragment(fragment: &str) -> String {
        let Some(window) = web_sys::window() else { return format!("#{fragment}") };
        let location = window.location();
        format!(
            "{}{}#{fragment}",
            location.origin().unwrap_or_default(),
            location.pathname().unwrap_or_default()
        )
    }

    /// Copies `text`; `done` hears whether the browser allowed it.
    pub fn copy_text(text: String, done: impl FnOnce(bool) + 'static) {
        let Some(window) = web_sys::window() else { return done(false) };
        let promise = window.navigator().clipboard().write_text(&text);
        leptos::task::spawn_local(async move {
            done(wasm_bindgen_futures::JsFuture::from(promise).await.is_ok());
        });
    }

    /// Offers `text` as a file download named `name`.
    pub fn download(name: &str, mime: &str, text: &str) {
        let parts = js_sys::Array::of1(&JsValue::from_str(text));
        let options = web_sys::BlobPropertyBag::new();
        options.set_type(mime);
        let Ok(blob) = web_sys::Blob::new_with_str_sequence_and_options(&parts, &options) else { return };
        let Ok(url) = web_sys::Url::create_object_url_with_blob(&blob) else { return };
        let document = web_sys::window().and_then(|window| window.document());
        if let Some(anchor) = document
            .and_then(|document| document.create_element("a").ok())
            .and_then(|element| element.dyn_into::<web_sys::HtmlAnchorElement>().ok())
        {
            anchor.set_href(&url);
            anchor.set_download(name);
            anchor.click();
        }
        let _ = web_sys::Url::revoke_object_url(&url);
    }

    /// Reads a file the reader picked or dropped as text; `done` gets its
    /// name and content, or an error to show.
    pub fn read_file(file: web_sys::File, done: impl FnOnce(Result<(String, String), String>) + 'static) {
        let name = file.name();
        let promise = file.text();
        leptos::task::spawn_local(async move {
            match wasm_bindgen_futures::JsFuture::from(promise).await {
                Ok(text) => done(Ok((name, text.as_string().unwrap_or_default()))),
                Err(_) => done(Err(format!("{name} could not be read as text"))),
            }
        });
    }

    /// A performance mark, for the browser tests' timings (and devtools).
    pub fn mark(name: &str) {
        if let Some(performance) = web_sys::window().and_then(|window| window.performance()) {
            let _ = performance.mark(name);
        }
    }

    /// Scrolls the source pane so that `line` (1-based) sits near the top
    /// third, selects lines `start..=end` and focuses the pane.
    pub fn reveal_lines(textarea: &web_sys::HtmlTextAreaElement, source: &str, start: usize, end: usize) {
        // The pane itself first: on a phone the report sits below it.
        let options = web_sys::ScrollIntoViewOptions::new();
        options.set_block(web_sys::ScrollLogicalPosition::Nearest);
        textarea.scroll_into_view_with_scroll_into_view_options(&options);
        let line_height = web_sys::window()
            .and_then(|window| window.get_computed_style(textarea).ok().flatten())
            .and_then(|style| style.get_property_value("line-height").ok())
            .and_then(|value| value.trim_end_matches("px").parse::<f64>().ok())
            .unwrap_or(20.0);
        let top = (start.saturating_sub(1) as f64) * line_height - f64::from(textarea.client_height()) / 3.0;
        textarea.set_scroll_top(top.max(0.0) as i32);
        let (from, to) = utf16_line_span(source, start, end);
        let _ = textarea.focus();
        let _ = textarea.set_selection_range(from, to);
        // Focusing may scroll the caret into view; put our position back.
        textarea.set_scroll_top(top.max(0.0) as i32);
    }

    /// The UTF-16 offsets (what a textarea counts in) of the start of line
    /// `start` and the end of line `end`.
    fn utf16_line_span(source: &str, start: usize, end: usize) -> (u32, u32) {
        let mut offset = 0u32;
        let (mut from, mut to) = (0u32, 0u32);
        for (index, line) in source.split('\n').enumerate() {
            let number = index + 1;
            let width = line.encode_utf16().count() as u32;
            if number == start {
                from = offset;
            }
            if number == end {
                to = offset + width;
                break;
            }
            offset += width + 1;
        }
        (from, to.max(from))
    }

    /// What the reader typed or pasted before the page hydrated, as the
    /// early script of the page kept it ([`super::EARLY_SCRIPT`]); taken once.
    pub fn early_source() -> Option<String> {
        let window = web_sys::window()?;
        let key = JsValue::from_str(super::EARLY_KEY);
        let value = Reflect::get(&window, &key).ok()?.as_string();
        let _ = Reflect::delete_property(&window, &key);
        value
    }

    /// Takes back what the early script showed: the note that the
    /// server's report was of the example, and the report's stale mark.
    pub fn settle_early() {
        let Some(window) = web_sys::window() else { return };
        // From now on the page itself follows the textarea: the early
        // script's listener stands down.
        let _ = Reflect::set(&window, &JsValue::from_str("__fixedpointEarlyDone"), &JsValue::TRUE);
        let Some(document) = window.document() else { return };
        if let Ok(Some(page)) = document.query_selector(".audit-page[data-stale]") {
            let _ = page.remove_attribute("data-stale");
        }
    }

    fn storage() -> Option<web_sys::Storage> {
        web_sys::window()?.local_storage().ok().flatten()
    }

    /// The source (and language) kept in this browser's local storage.
    pub fn kept_source() -> Option<(String, String)> {
        let text = storage()?.get_item(super::KEPT_KEY).ok()??;
        let value: serde_json::Value = serde_json::from_str(&text).ok()?;
        let source = value.get("source")?.as_str()?.to_string();
        let language = value.get("language").and_then(|l| l.as_str()).unwrap_or("auto").to_string();
        (!source.is_empty()).then_some((source, language))
    }

    /// Keeps the source in local storage (never sent anywhere); a storage
    /// that is full or refused just keeps nothing.
    pub fn keep_source(source: &str, language: &str) {
        if let Some(storage) = storage() {
            let value = serde_json::json!({ "source": source, "language": language });
            let _ = storage.set_item(super::KEPT_KEY, &value.to_string());
        }
    }

    /// Forgets the kept source.
    pub fn forget_source() {
        if let Some(storage) = storage() {
            let _ = storage.remove_item(super::KEPT_KEY);
        }
    }
}

#[cfg(not(feature = "hydrate"))]
mod server_side {
    //! On the server there is no worker, clipboard or textarea: the page is
    //! rendered once and these calls never happen.

    use super::EngineEvent;

    pub fn start_engine(_on_event: impl Fn(EngineEvent) + 'static) {}
    pub fn stop_engine() {}
    pub fn request_audit(_id: u32, _source: &str, _language: &str, _path: &str) {}
    pub fn request_render(_id: u32, _format: &str, _source: &str, _language: &str, _path: &str) {}
    pub fn request_pack(_id: u32, _source: &str, _language: &str) {}
    pub fn request_unpack(_id: u32, _fragment: &str) {}
    pub fn set_fragment(_fragment: Option<&str>) {}
    pub fn url_with_fragment(fragment: &str) -> String {
        format!("#{fragment}")
    }
    pub fn copy_text(_text: String, done: impl FnOnce(bool) + 'static) {
        done(false)
    }
    pub fn download(_name: &str, _mime: &str, _text: &str) {}
    pub fn mark(_name: &str) {}
    pub fn read_file(
        file: std::convert::Infallible,
        _done: impl FnOnce(Result<(String, String), String>) + 'static,
    ) {
        match file {}
    }
    pub fn reveal_lines(_textarea: &web_sys::HtmlTextAreaElement, _source: &str, _start: usize, _end: usize) {
    }
    pub fn early_audit() -> Option<(String, String)> {
        None
    }
    pub fn early_source() -> Option<String> {
        None
    }
    pub fn settle_early() {}
    pub fn kept_source() -> Option<(String, String)> {
        None
    }
    pub fn keep_source(_source: &str, _language: &str) {}
    pub fn forget_source() {}
}
