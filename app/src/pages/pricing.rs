//! `/pricing`: the three tiers side by side, the live founder seat bar, and
//! the buttons that start Stripe Checkout (form posts: they work without
//! JavaScript; with it, the seat bar follows the server's live count); and
//! `/checkout/thanks`, where Stripe sends the reader after paying.
//!
//! Both carry `next`, the page the reader came from (an issue's paywall):
//! signing in from the pricing page comes back to it, a checkout sends the
//! reader to the thank-you page with it, and that page links back to it.

use leptos::prelude::*;
use leptos_meta::{Meta, Title};
use serde::{Deserialize, Serialize};

use crate::auth::{set_status, use_page_data};
use crate::pages::subscribe::SubscribeForm;
use crate::return_to::{next_field, use_next, with_next};

/// The prices of PRODUCT.md, in dollars (Stripe's prices must match them).
pub const PRO_MONTHLY_USD: u32 = 15;
pub const PRO_YEARLY_USD: u32 = 250;
pub const FOUNDER_YEARLY_USD: u32 = 300;

/// The Pro plans, as buttons label them.
pub fn pro_plans() -> [(&'static str, String); 2] {
    [
        ("pro_monthly", format!("Pro monthly, ${PRO_MONTHLY_USD}")),
        ("pro_yearly", format!("Pro yearly, ${PRO_YEARLY_USD}")),
    ]
}

/// The Founder plan, as its button labels it.
pub fn founder_plans() -> [(&'static str, String); 1] {
    [("founder_yearly", format!("Founder yearly, ${FOUNDER_YEARLY_USD}"))]
}

/// What a year of Pro costs each way, in one sentence: the saving when the
/// yearly price is below twelve months, and the plain comparison when it
/// is not (at $15 a month and $250 a year it is not: a year paid monthly
/// costs $180).
pub fn yearly_comparison(monthly: u32, yearly: u32) -> String {
    let twelve = monthly * 12;
    if yearly < twelve {
        format!("A year paid monthly costs ${twelve}: paying yearly saves ${}.", twelve - yearly)
    } else {
        format!("A year costs ${twelve} paid monthly (12 × ${monthly}) or ${yearly} paid at once.")
    }
}

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
    let next = use_next();
    let notice = pricing
        .notice
        .clone()
        .map(|notice| view! { <p class="notice" role="status" data-testid="pricing-notice">{notice}</p> });
    let came_from = next.clone().map(|next| {
        view! {
            <p class="muted" data-testid="pricing-return">
                "After paying you come back to " <a href=next rel="external">"the page you were reading"</a> "."
            </p>
        }
    });
    view! {
        <Title text="Pricing"/>
        <Meta name="description" content="Fixed Point tiers: Free, Pro and Founder."/>
        <section class="pricing">
            <h1>"Pricing"</h1>
            <p class="lede">"The weekly issue is free. Subscribers read everything and get the tools behind it."</p>
            {notice}
            {came_from}
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
                    <p class="price">{format!("${PRO_MONTHLY_USD}")} <span>" a month"</span></p>
                    <p class="price-alt">{format!("or ${PRO_YEARLY_USD} a year")}</p>
                    <p class="price-compare" data-testid="pro-yearly-comparison">
                        {yearly_comparison(PRO_MONTHLY_USD, PRO_YEARLY_USD)}
                    </p>
                    <ul>
                        <li>"Every issue's paid sections and the full archive"</li>
                        <li>"The flagship tool's source, to download"</li>
                        <li>"A private, machine-readable feed"</li>
                    </ul>
                    {plan_actions(&pricing, &pro_plans(), "pro", next.as_deref())}
                </article>
                <article class="plan founder" data-testid="plan-founder">
                    <h2>"Founder"</h2>
                    <p class="price">{format!("${FOUNDER_YEARLY_USD}")} <span>" a year"</span></p>
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
                            plan_actions(&pricing, &founder_plans(), "founder", next.as_deref()).into_any()
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

/// The thank-you page's data: the reader's tier as the database has it
/// (Stripe's webhooks write it; this page never does), and the page they
/// came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThanksView {
    pub signed_in: bool,
    /// `free`, `pro` or `founder`.
    pub tier: String,
    /// The page to go back to (a path of this site), if the checkout
    /// carried one.
    pub next: Option<String>,
    /// That page's issue title, when it is an issue.
    pub next_title: Option<String>,
}

/// What each paid tier reads, for the thank-you page.
fn tier_gives(tier: &str) -> &'static str {
    match tier {
        "founder" => "everything in Pro (every paid section, the full archive, the flagship tool's source, a private feed), the founder-only issues and the founders' MCP server",
        _ => "every issue's paid sections, the full archive, the flagship tool's source and a private feed",
    }
}

/// `/checkout/thanks`: where Stripe sends the reader after paying. It says
/// what the reader now has, as the database says it: until Stripe's
/// webhook has arrived that is still the free tier, and the page says so
/// instead of pretending.
#[component]
pub fn ThanksPage() -> impl IntoView {
    let Some(thanks) = use_page_data::<ThanksView>() else {
        set_status(503);
        return view! {
            <Title text="Thank you"/>
            <section class="narrow"><h1>"Thank you"</h1><p>"This page could not be loaded just now; reload it shortly."</p></section>
        }
        .into_any();
    };
    let back = thanks.next.clone().map(|next| {
        let label = match &thanks.next_title {
            Some(title) => format!("Back to \u{201c}{title}\u{201d}"),
            None => "Back to where you were".to_string(),
        };
        view! { <p><a class="button button-primary" href=next rel="external" data-testid="thanks-back">{label}</a></p> }
    });
    let here = with_next("/checkout/thanks", thanks.next.as_deref());
    let status = if !thanks.signed_in {
        view! {
            <p data-testid="thanks-status">
                "You are signed out on this device, so this page cannot tell what you read now. "
                <a href=with_next("/signin", Some(&here))>"Sign in"</a> " with the address you paid with."
            </p>
        }
        .into_any()
    } else if thanks.tier == "free" {
        view! {
            <div class="notice-box" role="status" data-testid="thanks-status" data-tier="free">
                <p><strong>"Your payment is with Stripe; its confirmation has not reached us yet."</strong></p>
                <p>
                    "Stripe tells this site about a new subscription within seconds, usually. Until it has, "
                    "you still read the free parts. "
                    <a href=here rel="external">"Check again"</a>
                    " in a moment; if nothing changes within a few minutes, your "
                    <a href="/account" rel="external">"account page"</a> " shows what Stripe has told us."
                </p>
            </div>
        }
        .into_any()
    } else {
        let tier = crate::pages::issues::tier_label(&thanks.tier);
        view! {
            <p data-testid="thanks-status" data-tier=thanks.tier.clone()>
                <strong>{format!("You are a {tier} reader now.")}</strong>
                {format!(" You read {}. ", tier_gives(&thanks.tier))}
                "Your " <a href="/account" rel="external">"account page"</a>
                " has your private feed and manages the subscription."
            </p>
        }
        .into_any()
    };
    view! {
        <Title text="Thank you"/>
        <section class="narrow" data-testid="thanks">
            <h1>"Thank you for subscribing"</h1>
            {status}
            {back}
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

fn plan_actions(
    pricing: &PricingView,
    plans: &[(&'static str, String)],
    tier: &str,
    next: Option<&str>,
) -> impl IntoView {
    if !pricing.payments_configured {
        return view! {
            <p class="muted" data-testid="payments-off">"Payments are not configured on this site yet."</p>
        }
        .into_any();
    }
    if !pricing.signed_in {
        // Signing in comes back here, with the page the reader came from.
        let signin = with_next("/signin", Some(&with_next("/pricing", next)));
        return view! {
            <p><a class="button" href=signin data-testid=format!("signin-to-{tier}")>"Sign in to subscribe"</a></p>
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
    plan_buttons(plans, next).into_any()
}

/// One button per plan, each a form post to `/checkout` (no script needed)
/// carrying the page to come back to after paying.
pub fn plan_buttons(plans: &[(&'static str, String)], next: Option<&str>) -> impl IntoView {
    view! {
        <div class="plan-buttons">
            {plans
                .iter()
                .map(|(plan, label)| {
                    view! {
                        <form method="post" action="/checkout">
                            <input type="hidden" name="plan" value=*plan/>
                            {next_field(next.map(str::to_string))}
                            <button type="submit" class="button" data-testid=format!("checkout-{plan}")>
                                {label.clone()}
                            </button>
                        </form>
                    }
                })
                .collect_view()}
        </div>
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_yearly_plan_shows_a_saving_only_when_there_is_one() {
        // PRODUCT.md's prices: twelve months cost less than the yearly plan.
        assert_eq!(
            yearly_comparison(PRO_MONTHLY_USD, PRO_YEARLY_USD),
            "A year costs $180 paid monthly (12 × $15) or $250 paid at once."
        );
        assert_eq!(yearly_comparison(15, 150), "A year paid monthly costs $180: paying yearly saves $30.");
        assert_eq!(
            yearly_comparison(15, 180),
            "A year costs $180 paid monthly (12 × $15) or $180 paid at once."
        );
    }
}
