//! `/pricing`: the three tiers side by side, the live founder seat bar, and
//! the buttons that start Stripe Checkout (form posts: they work without
//! JavaScript; with it, the seat bar follows the server's live count).

use leptos::prelude::*;
use leptos_meta::{Meta, Title};
use serde::{Deserialize, Serialize};

use crate::auth::{set_status, use_page_data};
use crate::pages::subscribe::SubscribeForm;

/// Founder seats as `GET /api/v1/founders` reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FounderSeats {
    pub taken: i64,
    pub total: i64,
    pub open: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PricingView {
    pub founders: FounderSeats,
    pub payments_configured: bool,
    pub signed_in: bool,
    /// `free`, `pro` or `founder`.
    pub reader_tier: String,
    /// The reader pays through Stripe already (the portal manages it).
    pub has_subscription: bool,
    /// What the last form post did (a refusal, or the waitlist).
    pub notice: Option<String>,
    /// The founders' MCP server: `auto` (opens when every seat is taken),
    /// `on` (open regardless) or `off`.
    #[serde(default)]
    pub mcp_switch: String,
}

/// What the pricing and account pages say of the founders' MCP server.
pub fn mcp_status(switch: &str, seats: FounderSeats) -> String {
    match switch {
        "on" => "The founders-only MCP server: open now".to_string(),
        "off" => "The founders-only MCP server (switched off for now)".to_string(),
        _ if seats.taken >= seats.total => "The founders-only MCP server: open now".to_string(),
        _ => {
            let left = seats.total - seats.taken;
            format!(
                "The founders-only MCP server, switched on once all {} seats are taken: {left} {} left",
                seats.total,
                if left == 1 { "is" } else { "are" }
            )
        }
    }
}

#[component]
pub fn PricingPage() -> impl IntoView {
    let Some(pricing) = use_page_data::<PricingView>() else {
        set_status(503);
        return view! {
            <Title text="Pricing"/>
            <section class="narrow"><h1>"Pricing"</h1><p>"Prices could not be loaded just now; try again shortly."</p></section>
        }
        .into_any();
    };
    let seats = RwSignal::new(pricing.founders);
    live_seats(seats);
    let notice = pricing
        .notice
        .clone()
        .map(|notice| view! { <p class="notice" role="status" data-testid="pricing-notice">{notice}</p> });
    view! {
        <Title text="Pricing"/>
        <Meta name="description" content="Fixed Point tiers: Free, Pro and Founder."/>
        <section class="pricing">
            <h1>"Pricing"</h1>
            <p class="lede">"The weekly issue is free. Subscribers read everything and get the tools behind it."</p>
            {notice}
            <div class="plans">
                <article class="plan" data-testid="plan-free">
                    <h2>"Free"</h2>
                    <p class="price">"$0"</p>
                    <ul>
                        <li>"The weekly issue's public sections"</li>
                        <li>"The loop auditor in your browser"</li>
                        <li>"The public RSS, Atom and JSON feeds"</li>
                    </ul>
                    <p class="muted">"No card, no account needed to read."</p>
                    <SubscribeForm place="pricing" heading="The weekly issue by email."/>
                </article>
                <article class="plan" data-testid="plan-pro">
                    <h2>"Pro"</h2>
                    <p class="price">"$15" <span>" a month"</span></p>
                    <p class="price-alt">"or $250 a year"</p>
                    <ul>
                        <li>"Every issue's paid sections and the full archive"</li>
                        <li>"The flagship tool's source, to download"</li>
                        <li>"A private, machine-readable feed"</li>
                    </ul>
                    {plan_actions(&pricing, &[("pro_monthly", "Pro monthly, $15"), ("pro_yearly", "Pro yearly, $250")], "pro")}
                </article>
                <article class="plan founder" data-testid="plan-founder">
                    <h2>"Founder"</h2>
                    <p class="price">"$300" <span>" a year"</span></p>
                    <ul>
                        <li>"Everything in Pro"</li>
                        <li>"Founder-only issues"</li>
                        <li data-testid="mcp-status">
                            {
                                let switch = pricing.mcp_switch.clone();
                                move || mcp_status(&switch, seats.get())
                            }
                        </li>
                    </ul>
                    <SeatBar seats/>
                    {move || {
                        if seats.get().open {
                            plan_actions(&pricing, &[("founder_yearly", "Founder yearly, $300")], "founder").into_any()
                        } else {
                            let seats = seats.get();
                            sold_out(pricing.signed_in, seats.taken < seats.total).into_any()
                        }
                    }}
                </article>
            </div>
        </section>
    }
    .into_any()
}

/// The founder bar: seats taken of the total, from the database (zero
/// included), following the live count once the page is hydrated.
#[component]
fn SeatBar(seats: RwSignal<FounderSeats>) -> impl IntoView {
    let percent = move || {
        let seats = seats.get();
        if seats.total > 0 {
            (seats.taken * 100 / seats.total).clamp(0, 100)
        } else {
            100
        }
    };
    view! {
        <div class="seat-bar-wrap">
            <div
                class="seat-bar"
                role="progressbar"
                aria-label="Founder seats taken"
                aria-valuemin="0"
                aria-valuemax=move || seats.get().total.to_string()
                aria-valuenow=move || seats.get().taken.to_string()
            >
                <div class="seat-bar-fill" style=move || format!("width: {}%", percent())></div>
            </div>
            <p class="seat-count" data-testid="founder-count" aria-live="polite">
                <strong data-testid="founder-taken">{move || seats.get().taken}</strong>
                " of "
                {move || seats.get().total}
                " founder seats taken"
                {move || (!seats.get().open).then_some(" · sold out")}
            </p>
        </div>
    }
}

fn plan_actions(pricing: &PricingView, plans: &[(&'static str, &'static str)], tier: &str) -> impl IntoView {
    if !pricing.payments_configured {
        return view! {
            <p class="muted" data-testid="payments-off">"Payments are not configured on this site yet."</p>
        }
        .into_any();
    }
    if !pricing.signed_in {
        return view! {
            <p><a class="button" href="/signin" data-testid=format!("signin-to-{tier}")>"Sign in to subscribe"</a></p>
        }
        .into_any();
    }
    if pricing.has_subscription {
        return view! {
            <p class="muted">
                "You subscribe already (" {crate::pages::issues::tier_label(&pricing.reader_tier)} "). "
                <a href="/account" rel="external">"Manage it from your account."</a>
            </p>
        }
        .into_any();
    }
    view! {
        <div class="plan-buttons">
            {plans
                .iter()
                .map(|(plan, label)| {
                    view! {
                        <form method="post" action="/checkout">
                            <input type="hidden" name="plan" value=*plan/>
                            <button type="submit" class="button" data-testid=format!("checkout-{plan}")>
                                {*label}
                            </button>
                        </form>
                    }
                })
                .collect_view()}
        </div>
    }
    .into_any()
}

/// No seat can be held now: every seat is paid for, or some are held by
/// checkouts in progress (those come back if not completed in 30 minutes).
fn sold_out(signed_in: bool, some_only_held: bool) -> impl IntoView {
    let why = if some_only_held {
        " Every remaining seat is held by a checkout in progress; a seat comes back when Stripe ends a checkout that was not completed (checkouts last 30 minutes)."
    } else {
        " A seat opens when a founder leaves; the operator sees the waitlist."
    };
    view! {
        <div class="sold-out" data-testid="sold-out">
            <p><strong>"Sold out."</strong> {why}</p>
            <form method="post" action="/pricing/waitlist" class="inline-form">
                <label for="waitlist-email">"Email"</label>
                <input id="waitlist-email" type="email" name="email" required=true autocomplete="email"/>
                <button type="submit" class="button">"Join the waitlist"</button>
            </form>
            {(!signed_in).then(|| view! { <p class="muted">"No account needed for the waitlist."</p> })}
        </div>
    }
}

/// Follows `/api/v1/founders/live` while the page is open (browser only).
fn live_seats(seats: RwSignal<FounderSeats>) {
    #[cfg(feature = "hydrate")]
    {
        Effect::new(move |_| {
            browser::start(move |count| seats.set(count));
        });
        on_cleanup(browser::stop);
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = seats;
}

#[cfg(feature = "hydrate")]
mod browser {
    use std::cell::RefCell;

    use wasm_bindgen::prelude::*;
    use wasm_bindgen::JsCast;
    use web_sys::{EventSource, MessageEvent};

    use super::FounderSeats;

    thread_local! {
        static SOURCE: RefCell<Option<EventSource>> = const { RefCell::new(None) };
    }

    pub fn start(on_count: impl Fn(FounderSeats) + 'static) {
        stop();
        let Ok(source) = EventSource::new("/api/v1/founders/live") else { return };
        let on_message = Closure::<dyn Fn(MessageEvent)>::new(move |event: MessageEvent| {
            if let Some(text) = event.data().as_string() {
                if let Ok(count) = serde_json::from_str::<FounderSeats>(&text) {
                    on_count(count);
                }
            }
        });
        // Named events: the stream sends `event: founders`.
        let _ = source.add_event_listener_with_callback("founders", on_message.as_ref().unchecked_ref());
        on_message.forget();
        SOURCE.with(|slot| *slot.borrow_mut() = Some(source));
    }

    pub fn stop() {
        SOURCE.with(|slot| {
            if let Some(source) = slot.borrow_mut().take() {
                source.close();
            }
        });
    }
}
