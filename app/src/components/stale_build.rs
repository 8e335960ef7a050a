//! A page opened before a deploy keeps navigating after it.
//!
//! Every build's files live under their build's directory (`/pkg/<id>/`)
//! and a server serves its own build only. A page of an earlier build, left
//! open over a deploy, still runs that build's code: when it first shows a
//! page whose module it has not loaded, that module's address answers 404.
//! build-site has the split loader (`__wasm_split.js`) ask
//! `window.__fixedpointModuleFailed` before it reports a failed load to the
//! router (which cannot recover from one: the page would break). The answer
//! here is a full load of the address the router was going to, which brings
//! the new build; the loader waits on the promise it gets, forever, so
//! nothing of the old page reports the failure.
//!
//! A full load is not tried twice in a row for the same address: if the
//! page it brought fails to load its own module too (a server that cannot
//! serve its own build), the failure goes on as it would have, rather than
//! loading the page over and over. A page that hydrates clears the mark.

use leptos::prelude::*;

/// Installs the loader's recovery (in the browser; nothing on the server).
/// Must sit inside the `<Router>`: it reads where the router is going.
#[component]
pub fn FullLoadOnStaleBuild() -> impl IntoView {
    #[cfg(feature = "hydrate")]
    browser::install(leptos_router::hooks::use_location());
}

#[cfg(feature = "hydrate")]
pub use browser::hydrated;

#[cfg(feature = "hydrate")]
mod browser {
    use leptos::prelude::*;
    use leptos_router::location::Location;
    use wasm_bindgen::prelude::*;

    /// Session storage: the address a full load was last made to.
    const TRIED: &str = "fixedpoint:full-load-after-failed-module";

    pub fn install(location: Location) {
        let on_failure = Closure::<dyn Fn(JsValue) -> JsValue>::new(move |_error: JsValue| {
            let target = target(&location);
            let storage = window().session_storage().ok().flatten();
            let tried = storage.as_ref().and_then(|storage| storage.get_item(TRIED).ok().flatten());
            if tried.as_deref() == Some(target.as_str()) {
                hydrated();
                return JsValue::UNDEFINED;
            }
            if let Some(storage) = &storage {
                let _ = storage.set_item(TRIED, &target);
            }
            let here = window().location();
            let current =
                format!("{}{}", here.pathname().unwrap_or_default(), here.search().unwrap_or_default());
            // `assign` to the address the page has (a fragment aside) would
            // only scroll: reload it instead.
            let loading = if target.split('#').next() == Some(current.as_str()) {
                here.reload()
            } else {
                here.assign(&target)
            };
            if loading.is_err() {
                return JsValue::UNDEFINED;
            }
            js_sys::Promise::new(&mut |_, _| {}).into()
        });
        let _ = js_sys::Reflect::set(&window(), &"__fixedpointModuleFailed".into(), on_failure.as_ref());
        // The hook lives as long as the page.
        on_failure.forget();
    }

    /// Where the router is (or is going, while a page's module loads: the
    /// address bar changes only once the page is ready).
    fn target(location: &Location) -> String {
        let mut target = location.pathname.get_untracked();
        let search = location.search.get_untracked();
        if !search.is_empty() {
            target.push('?');
            target.push_str(&search);
        }
        let hash = location.hash.get_untracked();
        if !hash.is_empty() {
            if !hash.starts_with('#') {
                target.push('#');
            }
            target.push_str(&hash);
        }
        target
    }

    /// The page hydrated: a later failure may load a page afresh again.
    pub fn hydrated() {
        if let Some(storage) = window().session_storage().ok().flatten() {
            let _ = storage.remove_item(TRIED);
        }
    }
}
