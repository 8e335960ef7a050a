//! `/issues` (the archive) and `/issues/{slug}` (one issue). The server
//! loads what the reader may read before rendering: for a reader who is not
//! entitled to an issue's tier the paid remainder is never loaded, so it
//! cannot reach the HTML or the hydration data.

use leptos::prelude::*;
use leptos_meta::{Meta, Title};
use serde::{Deserialize, Serialize};

use crate::auth::{set_status, use_page_data};
use crate::pages::pricing::{
    founder_plans, plan_buttons, pro_plans, yearly_comparison, PRO_MONTHLY_USD, PRO_YEARLY_USD,
};
use crate::pages::subscribe::SubscribeForm;
use crate::return_to::with_next;

/// An issue as the archive lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssueCard {
    pub slug: String,
    pub title: String,
    pub date: String,
    /// `free`, `pro` or `founder`.
    pub tier: String,
    pub summary: String,
    /// Part of the issue is for a paid tier.
    pub has_paid_part: bool,
    /// This reader may read all of it.
    pub readable: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArchiveView {
    pub issues: Vec<IssueCard>,
    /// The reader's tier (`free` when signed out).
    pub reader_tier: String,
}

/// One issue, cut to what this reader may read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssueView {
    pub slug: String,
    pub title: String,
    pub date: String,
    pub tier: String,
    pub summary: String,
    /// Sanitised HTML of the free part.
    pub free_html: String,
    /// Sanitised HTML of the paid remainder: `None` unless the reader is
    /// entitled to it.
    pub paid_html: Option<String>,
    /// Words held back from this reader (0 when nothing is).
    pub locked_words: i64,
    pub signed_in: bool,
    pub reader_tier: String,
    /// Stripe is configured: the paywall offers the plans' buttons.
    #[serde(default)]
    pub payments_configured: bool,
}

/// The home page's latest free issue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LatestIssue(pub Option<IssueCard>);

pub fn tier_label(tier: &str) -> &'static str {
    match tier {
        "pro" => "Pro",
        "founder" => "Founder",
        _ => "Free",
    }
}

#[component]
pub fn TierBadge(tier: String) -> impl IntoView {
    view! { <span class=format!("tier-badge tier-{tier}")>{tier_label(&tier)}</span> }
}

#[component]
pub fn ArchivePage() -> impl IntoView {
    let Some(archive) = use_page_data::<ArchiveView>() else {
        set_status(503);
        return view! {
            <Title text="Archive"/>
            <section class="narrow">
                <h1>"Archive"</h1>
                <p>"The archive could not be loaded just now. Try again in a moment."</p>
            </section>
        }
        .into_any();
    };
    let empty = archive.issues.is_empty();
    view! {
        <Title text="Archive"/>
        <Meta name="description" content="Every issue of Fixed Point, newest first."/>
        <section class="archive">
            <h1>"Archive"</h1>
            <p class="lede">
                "Every issue, newest first. Free issues are open to all; "
                <span class="tier-badge tier-pro">"Pro"</span> " and "
                <span class="tier-badge tier-founder">"Founder"</span>
                " parts open with a " <a href="/pricing" rel="external">"subscription"</a> ". "
                "Feeds: " <a href="/feed/rss.xml" rel="external">"RSS"</a> ", "
                <a href="/feed/atom.xml" rel="external">"Atom"</a> ", "
                <a href="/feed/feed.json" rel="external">"JSON Feed"</a> "."
            </p>
            <SubscribeForm place="archive"/>
            {empty.then(|| view! { <p class="muted">"No issues yet."</p> })}
            <ol class="issue-list" data-testid="archive">
                {archive
                    .issues
                    .into_iter()
                    .map(|issue| {
                        let lock = (!issue.readable).then(|| {
                            view! {
                                <span class="lock" title="Part of this issue is for a paid tier">
                                    {if issue.has_paid_part && issue.tier == "founder" { "Founders" } else { "Paid part" }}
                                </span>
                            }
                        });
                        view! {
                            <li class="issue-card" data-testid=format!("issue-{}", issue.slug)>
                                <p class="issue-meta">
                                    <time datetime=issue.date.clone()>{issue.date.clone()}</time>
                                    " "
                                    <TierBadge tier=issue.tier.clone()/>
                                    " "
                                    {lock}
                                </p>
                                <h2>
                                    <a href=format!("/issues/{}", issue.slug) rel="external">
                                        {issue.title.clone()}
                                    </a>
                                </h2>
                                <p>{issue.summary.clone()}</p>
                            </li>
                        }
                    })
                    .collect_view()}
            </ol>
        </section>
    }
    .into_any()
}

#[component]
pub fn IssuePage() -> impl IntoView {
    let Some(issue) = use_page_data::<IssueView>() else {
        set_status(404);
        return view! {
            <Title text="Not found"/>
            <section class="not-found" data-testid="not-found">
                <h1>"No such issue"</h1>
                <p>"There is no issue at this address. " <a href="/issues" rel="external">"See the archive."</a></p>
            </section>
        }
        .into_any();
    };
    let locked = issue.locked_words > 0;
    let card = locked.then(|| upgrade_card(&issue));
    view! {
        <Title text=issue.title.clone()/>
        <Meta name="description" content=issue.summary.clone()/>
        <article class="issue" data-testid="issue">
            <header class="issue-head">
                <p class="issue-meta">
                    <a href="/issues" rel="external">"Archive"</a>
                    " · "
                    <time datetime=issue.date.clone()>{issue.date.clone()}</time>
                    " "
                    <TierBadge tier=issue.tier.clone()/>
                </p>
                <h1>{issue.title.clone()}</h1>
                <p class="lede">{issue.summary.clone()}</p>
            </header>
            <div class="issue-body" data-testid="issue-free" on:click=copy_code inner_html=with_code_actions(&issue.free_html)></div>
            {issue
                .paid_html
                .clone()
                .map(|paid| {
                    view! { <div class="issue-body" data-testid="issue-paid" on:click=copy_code inner_html=with_code_actions(&paid)></div> }
                })}
            {card}
            <SubscribeForm place="issue" heading=if locked { "Or get the free part of each issue by email." } else { "Get the next issue by email." }/>
        </article>
    }
    .into_any()
}

/// Every code block can take the focus (it may scroll sideways). After
/// each code block that carries an audit share fragment (see the
/// server's `newsletter::format::share_fragment`), a row with "Audit this
/// loop" (the audit page with the code in its fragment, so nothing is sent)
/// and a copy button. The HTML was sanitised when the issue was imported;
/// the fragment holds only base64url characters, dots and letters, and is
/// checked again here before it goes into a link.
fn with_code_actions(html: &str) -> String {
    let mut out = String::with_capacity(html.len() + 256);
    let mut rest = html;
    while let Some(open) = rest.find("<pre ") {
        let Some(close) = rest[open..].find("</pre>").map(|at| open + at + "</pre>".len()) else { break };
        let tag_end = rest[open..].find('>').map_or(close, |at| open + at);
        let fragment = rest[open..tag_end]
            .split_once("data-audit=\"")
            .and_then(|(_, value)| value.split_once('"'))
            .map(|(value, _)| value)
            .filter(|value| {
                value.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
            });
        // A code block scrolls sideways on a phone: it takes the keyboard's
        // focus so that it can be scrolled without a pointer.
        out.push_str(&rest[..open]);
        out.push_str("<pre tabindex=\"0\" ");
        out.push_str(&rest[open + "<pre ".len()..close]);
        if let Some(fragment) = fragment {
            out.push_str(&format!(
                "<p class=\"code-actions\"><a class=\"button\" href=\"/audit#{fragment}\">Audit this loop</a> <button type=\"button\" class=\"button copy-code\">Copy</button></p>"
            ));
        }
        rest = &rest[close..];
    }
    out.push_str(rest);
    out
}

/// A click on a code block's copy button copies the block's text.
fn copy_code(event: leptos::ev::MouseEvent) {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        let Some(button) = event.target().and_then(|t| t.dyn_into::<web_sys::Element>().ok()) else { return };
        if !button.class_list().contains("copy-code") {
            return;
        }
        let code = button
            .closest(".code-actions")
            .ok()
            .flatten()
            .and_then(|row| row.previous_element_sibling())
            .and_then(|pre| pre.text_content());
        if let Some(code) = code {
            crate::pages::audit::client::copy_text(code, move |copied| {
                button.set_text_content(Some(if copied { "Copied" } else { "Select the code to copy it" }));
            });
        }
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = event;
}

/// The paywall. Every way on from it keeps the issue: signing in comes
/// back here, and a free reader who is signed in pays from here (one form
/// post to Stripe Checkout), then returns here through the thank-you page.
fn upgrade_card(issue: &IssueView) -> impl IntoView {
    let tier = tier_label(&issue.tier);
    let what = if issue.free_html.trim().is_empty() { "This issue" } else { "The rest of this issue" };
    let here = format!("/issues/{}", issue.slug);
    let pricing = with_next("/pricing", Some(&here));
    let action = if !issue.signed_in {
        view! {
            <p>
                <a class="button button-primary" href=with_next("/signin", Some(&here)) data-testid="upgrade-signin">
                    "Sign in to subscribe"
                </a>
                " or " <a href=pricing rel="external" data-testid="upgrade-link">"see the plans"</a>
                ". If you subscribe already, signing in opens the rest here."
            </p>
        }
        .into_any()
    } else if issue.payments_configured && issue.reader_tier == "free" {
        let (plans, comparison) = if issue.tier == "founder" {
            (founder_plans().to_vec(), None)
        } else {
            (pro_plans().to_vec(), Some(format!("{} ", yearly_comparison(PRO_MONTHLY_USD, PRO_YEARLY_USD))))
        };
        view! {
            {plan_buttons(&plans, Some(&here))}
            <p class="muted">
                {comparison}
                <a href=pricing rel="external" data-testid="upgrade-link">"Compare the plans"</a>
                ". After paying you come back to this issue."
            </p>
        }
        .into_any()
    } else {
        view! {
            <p>
                <a class="button" href=pricing rel="external" data-testid="upgrade-link">
                    {format!("Become a {tier} reader")}
                </a>
            </p>
        }
        .into_any()
    };
    view! {
        <aside class="upgrade-card" data-testid="upgrade-card" aria-label="Subscribe to read on">
            <h2>{format!("{what} is for {tier} readers")}</h2>
            <p>
                {format!(
                    "{} more words, with the paid sections of every issue, the full archive and the private feed.",
                    issue.locked_words,
                )}
                {(issue.tier == "founder").then_some(" Founder issues are for Founder subscribers; their seats are limited.")}
            </p>
            {action}
        </aside>
    }
}

#[cfg(test)]
mod code_action_tests {
    use super::with_code_actions;

    #[test]
    fn code_blocks_with_a_fragment_get_their_actions_and_others_none() {
        let html = "<p>Intro</p><pre class=\"code\" data-audit=\"v1.python.abc-_\"><code>x</code></pre><pre class=\"code\"><code>y</code></pre>";
        let out = with_code_actions(html);
        assert_eq!(out.matches("Audit this loop").count(), 1, "{out}");
        assert!(out.contains("href=\"/audit#v1.python.abc-_\""), "{out}");
        assert!(out.ends_with("<pre tabindex=\"0\" class=\"code\"><code>y</code></pre>"), "{out}");
        // Anything but the fragment's alphabet is not put in a link.
        let hostile = "<pre data-audit=\"v1.x.&quot;onclick\"><code>z</code></pre>";
        assert!(!with_code_actions(hostile).contains("Audit this loop"));
    }
}
