//! The email address field of the forms that mail a link (sign-in,
//! subscribe): the label, the input with what the reader typed, and the
//! error the server gave for it, tied to the input for screen readers.

use leptos::prelude::*;

/// `id` names the input; the error's paragraph is `{id}-error`.
#[component]
pub fn EmailField(#[prop(into)] id: String, value: String, error: Option<String>) -> impl IntoView {
    let error_id = format!("{id}-error");
    let described_by = error.is_some().then(|| error_id.clone());
    view! {
        <label for=id.clone()>"Email address"</label>
        <input
            id=id
            name="email"
            type="email"
            autocomplete="email"
            required
            value=value
            aria-invalid=error.is_some().then_some("true")
            aria-describedby=described_by
        />
        {error.map(|error| view! { <p id=error_id class="field-error" role="alert">{error}</p> })}
    }
}
