use auditor::ExitId;
use leptos::prelude::*;
use leptos_meta::{Meta, Title};

use crate::auth::use_page_data;
use crate::pages::issues::{LatestIssue, TierBadge};
use crate::pages::subscribe::SubscribeForm;

/// The home page: what the site is, and the eight exits at a glance.
#[component]
pub fn HomePage() -> impl IntoView {
    view! {
        <Title text=""/>
        <Meta name="description" content="Fixed Point: tools for agent loops that know when they have finished."/>
        <section class="hero">
            <h1>"Does your agent loop know when it is done?"</h1>
            <p class="lede">
                "A loop that can only be " <em>"bounded"</em>
                " (turn caps, budgets, timeouts) stops. A loop that can "
                <em>"detect"</em> " (goal met, no progress) knows it has finished. "
                "Fixed Point is the newsletter about that difference, and three tools that make it visible."
            </p>
            <LatestIssueCard/>
            <SubscribeForm place="home"/>
            <ul class="tools">
                <li>
                    <a href="/audit"><strong>"Audit a loop."</strong></a>
                    " Paste its source; see which of the eight exits it implements, computed in your browser."
                </li>
                <li>
                    <a href="/loops" rel="external"><strong>"Watch your loops."</strong></a>
                    " Connect running loops and see whether each is converging, stalled, thrashing or sitting on a fixed point."
                </li>
                <li>
                    <a href="/pricing" rel="external"><strong>"Subscribe."</strong></a>
                    " The weekly issue is free; the archive, the private feed and the founders' tools are paid."
                </li>
            </ul>
        </section>
        <ExitExplorer/>
    }
}

/// The newest free issue, when there is one.
#[component]
fn LatestIssueCard() -> impl IntoView {
    let latest = use_page_data::<LatestIssue>().and_then(|latest| latest.0)?;
    Some(view! {
        <div class="latest-issue" data-testid="latest-issue">
            <p class="issue-meta">
                "Latest free issue · " <time datetime=latest.date.clone()>{latest.date.clone()}</time> " "
                <TierBadge tier=latest.tier.clone()/>
            </p>
            <h2>
                <a href=format!("/issues/{}", latest.slug) rel="external">{latest.title.clone()}</a>
            </h2>
            <p>{latest.summary.clone()} " " <a href="/issues" rel="external">"All issues"</a></p>
        </div>
    })
}

/// The eight exits of the taxonomy. Without JavaScript it reads as a list;
/// once hydrated, choosing an exit shows what counts as its evidence.
#[component]
fn ExitExplorer() -> impl IntoView {
    let (selected, set_selected) = signal(ExitId::E1);

    view! {
        <section class="exit-explorer" aria-labelledby="exits-heading">
            <h2 id="exits-heading">"The eight exits"</h2>
            <div class="exit-chips" role="group" aria-label="Choose an exit">
                {ExitId::ALL
                    .into_iter()
                    .map(|exit| {
                        view! {
                            <button
                                type="button"
                                class=move || format!("exit-chip kind-{}", exit.kind().css_class())
                                aria-pressed=move || (selected.get() == exit).to_string()
                                data-testid=format!("chip-{}", exit.as_str())
                                on:click=move |_| set_selected.set(exit)
                            >
                                <span class="chip-id">{exit.as_str()}</span>
                                " "
                                {exit.label()}
                            </button>
                        }
                    })
                    .collect_view()}
            </div>
            <div class="exit-detail" aria-live="polite" data-testid="exit-detail">
                {move || {
                    let exit = selected.get();
                    view! {
                        <p>
                            <strong>{format!("{} {}", exit.as_str(), exit.label())}</strong>
                            " "
                            <span class=format!("kind-badge kind-{}", exit.kind().css_class())>
                                {exit.kind().as_str()}
                            </span>
                        </p>
                        <p>{exit.description()}</p>
                    }
                }}
            </div>
            <p class="verdict-rule">
                "Verdict: any DETECT exit gives " <strong>"CONVERGES"</strong>
                "; otherwise any BOUND exit gives " <strong>"DIVERGES"</strong>
                "; otherwise " <strong>"UNDEFINED"</strong>
                ". EXTERNAL exits never decide it."
            </p>
        </section>
    }
}
