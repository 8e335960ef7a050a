//! `/account`: who you are here, your tier, your teams, and signing out.

use leptos::prelude::*;
use leptos_meta::Title;

use serde::{Deserialize, Serialize};

use crate::auth::{format_time, set_status, use_page_data, use_viewer};
use crate::pages::issues::tier_label;

/// The subscription, feed and download sections of the account page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountView {
    /// `free`, `pro` or `founder`.
    pub tier: String,
    /// `grant` (complimentary) or `stripe`.
    pub source: Option<String>,
    pub status: Option<String>,
    /// When the period ends (renews, or a grant expires), Unix ms.
    pub period_end: Option<i64>,
    pub cancel_at_period_end: bool,
    /// When the private feed address was made (none yet: `None`).
    pub feed_created_at: Option<i64>,
    /// A feed address just made: shown this once (only its hash is kept).
    pub new_feed_url: Option<String>,
    pub download: Option<DownloadView>,
    /// The outcome of the last action.
    pub notice: Option<String>,
    pub payments_configured: bool,
    /// The reader has a Stripe customer: the portal has something to show.
    pub has_stripe_customer: bool,
    /// The current tier comes from a Stripe subscription (cancellable here).
    pub stripe_managed: bool,
    /// The founders' MCP server: for founders only.
    #[serde(default)]
    pub mcp: Option<McpView>,
    /// The newsletter by email: `on`, `off`, or `bounced` (the address's
    /// mail server refused it for good, so nothing is sent to it).
    #[serde(default)]
    pub newsletter: String,
}

/// The account page's MCP section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpView {
    /// Whether `/mcp` answers now.
    pub open: bool,
    /// What the pricing page says too: open, or how many seats are left.
    pub status: String,
    /// The server's address, `PUBLIC_URL/mcp`.
    pub url: String,
    /// The founder's tokens, newest first, revoked ones included.
    pub tokens: Vec<McpTokenView>,
    /// A token just made: shown this once (only its hash is kept).
    pub new_token: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpTokenView {
    pub id: i64,
    pub name: String,
    pub created_at: i64,
    pub last_used_at: Option<i64>,
    pub revoked_at: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DownloadView {
    pub file_name: String,
    pub size: i64,
}

#[component]
pub fn AccountPage() -> impl IntoView {
    let viewer = use_viewer();
    let details = use_page_data::<AccountView>();
    if viewer.is_none() {
        set_status(401);
    }
    view! {
        <Title text="Your account"/>
        <section class="narrow">
            <h1>"Your account"</h1>
            {match viewer {
                None => {
                    view! {
                        <p data-testid="account-signed-out">
                            "You are not signed in. " <a href="/signin">"Sign in"</a> " to see your account."
                        </p>
                    }
                        .into_any()
                }
                Some(viewer) => {
                    view! {
                        <dl class="facts" data-testid="account">
                            <dt>"Email"</dt>
                            <dd data-testid="account-email">{viewer.email.clone()}</dd>
                            <dt>"Tier"</dt>
                            <dd data-testid="account-tier">{tier_line(details.as_ref())}</dd>
                            <dt>"Role"</dt>
                            <dd>
                                {if viewer.is_operator {
                                    view! { "Operator · " <a href="/admin" rel="external">"Admin"</a> }.into_any()
                                } else {
                                    view! { "Reader" }.into_any()
                                }}
                            </dd>
                            <dt>"Teams"</dt>
                            <dd>
                                {if viewer.teams.is_empty() {
                                    view! { <span class="muted">"None yet."</span> }.into_any()
                                } else {
                                    view! {
                                        <ul class="plain-list" data-testid="account-teams">
                                            {viewer
                                                .teams
                                                .iter()
                                                .map(|team| {
                                                    view! {
                                                        <li>
                                                            // Team pages are loaded by the server: a full page load, not a
                                                            // client-side route change.
                                                            <a href=format!("/teams/{}", team.slug) rel="external">
                                                                {team.slug.clone()}
                                                            </a>
                                                            " (" {team.role.clone()} ")"
                                                        </li>
                                                    }
                                                })
                                                .collect_view()}
                                        </ul>
                                    }
                                        .into_any()
                                }}
                                <form method="post" action="/account" class="stack-form create-team">
                                    <input type="hidden" name="action" value="create_team"/>
                                    <label for="team-slug">"Create a team, named"</label>
                                    <input id="team-slug" name="slug" type="text" required minlength="2" maxlength="40" pattern="[a-z0-9]+(-[a-z0-9]+)*" placeholder="my-team" autocomplete="off"/>
                                    <button type="submit" class="button" data-testid="create-team">"Create team"</button>
                                </form>
                            </dd>
                        </dl>
                        {details.clone().map(subscription_sections)}
                        <form method="post" action="/signout">
                            <button type="submit" class="button" data-testid="signout">"Sign out"</button>
                        </form>
                    }
                        .into_any()
                }
            }}
        </section>
    }
}

fn tier_line(details: Option<&AccountView>) -> String {
    let Some(details) = details else { return "Free".to_string() };
    let mut line = tier_label(&details.tier).to_string();
    match details.source.as_deref() {
        Some("grant") => line.push_str(" (complimentary)"),
        Some(_) if details.status.as_deref() == Some("past_due") => {
            line.push_str(" (payment failed: Stripe is retrying; update your card to keep access)")
        }
        _ => {}
    }
    line
}

/// Renewal, private feed and download: what a subscription gives.
fn subscription_sections(details: AccountView) -> impl IntoView {
    let paying = details.tier != "free";
    let renewal = details.period_end.map(|end| {
        let when = format_time(end);
        let text = match (details.source.as_deref(), details.cancel_at_period_end) {
            (Some("grant"), _) => format!("Complimentary until {when}."),
            (_, true) => format!("Ends on {when}; it will not renew."),
            _ => format!("Renews on {when}."),
        };
        view! { <p data-testid="account-renewal">{text}</p> }
    });
    let notice = details.notice.clone().map(|notice| view! { <p class="notice" role="status">{notice}</p> });
    let feed = if paying {
        let new_url = details.new_feed_url.clone().map(|url| {
            view! {
                <p>"Your private feed address (shown once; we keep only a hash of it):"</p>
                <p><code class="feed-url" data-testid="feed-url">{url.clone()}</code></p>
                <p class="muted">"Add one of these to your feed reader:"</p>
                <ul class="plain-list" data-testid="feed-urls">
                    {[("RSS", "rss.xml"), ("Atom", "atom.xml"), ("JSON Feed", "feed.json")]
                        .into_iter()
                        .map(|(name, file)| {
                            let full = format!("{url}{file}");
                            view! {
                                <li>
                                    {name} ": " <code class="feed-url">{full.clone()}</code> " "
                                    <CopyButton text=full/>
                                </li>
                            }
                        })
                        .collect_view()}
                </ul>
            }
        });
        let state = match (details.feed_created_at, details.new_feed_url.is_some()) {
            (_, true) => None,
            (Some(made), false) => {
                Some(format!("You have a private feed address, made {}.", format_time(made)))
            }
            (None, false) => Some("You have no private feed address yet.".to_string()),
        };
        view! {
            <section class="account-section" aria-labelledby="feed-heading">
                <h2 id="feed-heading">"Private feed"</h2>
                <p class="muted">"The full text of every issue your tier reads, in any feed reader."</p>
                {state.map(|state| view! { <p>{state}</p> })}
                {new_url}
                <form method="post" action="/account" class="inline-form">
                    <input type="hidden" name="action" value="rotate_feed"/>
                    <button type="submit" class="button" data-testid="rotate-feed">
                        {if details.feed_created_at.is_some() { "Make a new address" } else { "Make my feed address" }}
                    </button>
                </form>
                {details.feed_created_at.is_some().then(|| view! {
                    <form method="post" action="/account" class="inline-form">
                        <input type="hidden" name="action" value="revoke_feed"/>
                        <button type="submit" class="button secondary">"Turn the feed off"</button>
                    </form>
                })}
            </section>
        }
        .into_any()
    } else {
        view! {
            <section class="account-section">
                <h2>"Subscription"</h2>
                <p>
                    "You read the free issues. " <a href="/pricing" rel="external">"Pro and Founder"</a>
                    " add the paid sections, the full archive, the private feed and the flagship tool's source."
                </p>
            </section>
        }
        .into_any()
    };
    let download = details.download.clone().map(|download| {
        view! {
            <section class="account-section">
                <h2>"The flagship tool"</h2>
                <p>
                    <a href="/downloads/flagship" rel="external" data-testid="flagship-download">
                        {format!("Download {} ({} KB)", download.file_name, (download.size + 1023) / 1024)}
                    </a>
                </p>
            </section>
        }
    });
    let billing = (details.has_stripe_customer || details.stripe_managed).then(|| {
        view! {
            <section class="account-section" aria-labelledby="billing-heading">
                <h2 id="billing-heading">"Billing"</h2>
                <form method="post" action="/account/billing" class="inline-form">
                    <input type="hidden" name="action" value="portal"/>
                    <button type="submit" class="button" data-testid="open-portal">"Invoices and card (Stripe)"</button>
                </form>
                {details.stripe_managed.then(|| {
                    let (action, label) = if details.cancel_at_period_end {
                        ("resume", "Keep my subscription")
                    } else {
                        ("cancel", "Cancel at the end of the period")
                    };
                    view! {
                        <form method="post" action="/account/billing" class="inline-form">
                            <input type="hidden" name="action" value=action/>
                            <button type="submit" class="button secondary" data-testid=format!("billing-{action}")>
                                {label}
                            </button>
                        </form>
                    }
                })}
            </section>
        }
    });
    let mcp = details.mcp.clone().map(mcp_section);
    let newsletter = newsletter_section(&details.newsletter);
    view! {
        {notice}
        {renewal}
        {billing}
        {newsletter}
        {feed}
        {mcp}
        {download}
    }
}

/// Copies `text` to the clipboard (once the page has hydrated; without
/// JavaScript the address beside it is there to select).
#[component]
fn CopyButton(text: String) -> impl IntoView {
    let (copied, set_copied) = signal(false);
    view! {
        <button
            type="button"
            class="button secondary copy-button"
            on:click=move |_| {
                copy_to_clipboard(&text);
                set_copied.set(true);
            }
        >
            {move || if copied.get() { "Copied" } else { "Copy" }}
        </button>
    }
}

fn copy_to_clipboard(text: &str) {
    #[cfg(feature = "hydrate")]
    if let Some(window) = web_sys::window() {
        let _ = window.navigator().clipboard().write_text(text);
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = text;
}

/// The reader's choice of the newsletter by email, and the button that
/// changes it.
fn newsletter_section(choice: &str) -> impl IntoView {
    let (state, action, label) = match choice {
        "on" => ("Each issue is mailed to you.", Some("newsletter_off"), "Stop mailing me the issues"),
        "bounced" => {
            ("Your address's mail server refused our mail for good, so we no longer send to it.", None, "")
        }
        _ => ("The issues are not mailed to you.", Some("newsletter_on"), "Mail me each issue"),
    };
    view! {
        <section class="account-section" aria-labelledby="newsletter-heading">
            <h2 id="newsletter-heading">"Newsletter by email"</h2>
            <p data-testid="newsletter-state">{state}</p>
            {action.map(|action| view! {
                <form method="post" action="/account" class="inline-form">
                    <input type="hidden" name="action" value=action/>
                    <button type="submit" class="button" data-testid="newsletter-toggle">{label}</button>
                </form>
            })}
        </section>
    }
}

/// Tokens for the founders' MCP server, and how to connect an agent.
fn mcp_section(mcp: McpView) -> AnyView {
    let new_token = mcp.new_token.clone().map(|token| {
        let config = format!(
            "{{\n  \"mcpServers\": {{\n    \"fixedpoint\": {{\n      \"type\": \"http\",\n      \"url\": \"{}\",\n      \"headers\": {{ \"Authorization\": \"Bearer {token}\" }}\n    }}\n  }}\n}}",
            mcp.url
        );
        view! {
            <div class="new-secret" role="status">
                <p>"Your new MCP token (shown once; we keep only a hash of it):"</p>
                <p><code class="feed-url" data-testid="mcp-token">{token.clone()}</code></p>
                <p class="muted">"An MCP client's configuration (Claude Code's " <code>".mcp.json"</code> ", Cursor's " <code>"mcp.json"</code> "):"</p>
                <pre class="config"><code>{config}</code></pre>
            </div>
        }
        .into_any()
    });
    let tokens = mcp.tokens.clone();
    let list = (!tokens.is_empty()).then(|| {
        view! {
            <ul class="token-list" data-testid="mcp-tokens">
                {tokens
                    .into_iter()
                    .map(|token| {
                        let used = token
                            .last_used_at
                            .map_or_else(|| "never used".to_string(), |at| format!("last used {}", format_time(at)));
                        let state = match token.revoked_at {
                            Some(at) => format!("revoked {}", format_time(at)),
                            None => format!("made {}, {used}", format_time(token.created_at)),
                        };
                        let live = token.revoked_at.is_none();
                        view! {
                            <li>
                                <strong>{token.name.clone()}</strong>
                                " "
                                <span class="muted">{state}</span>
                                {live.then(|| view! {
                                    <form method="post" action="/account" class="inline-form">
                                        <input type="hidden" name="action" value="revoke_mcp_token"/>
                                        <input type="hidden" name="token_id" value=token.id.to_string()/>
                                        <button type="submit" class="button secondary small" data-testid="revoke-mcp-token">
                                            "Revoke"
                                        </button>
                                    </form>
                                })}
                            </li>
                        }
                        .into_any()
                    })
                    .collect_view()}
            </ul>
        }
        .into_any()
    });
    view! {
        <section class="account-section" aria-labelledby="mcp-heading">
            <h2 id="mcp-heading">"MCP server"</h2>
            <p data-testid="mcp-account-status">{mcp.status.clone()}</p>
            <p class="muted">
                "Connect your own agents to " <code>{mcp.url.clone()}</code>
                " with a personal token: they can audit a loop, read your team's loop history and ask whether they have been in a state before."
            </p>
            {new_token}
            <form method="post" action="/account" class="inline-form">
                <input type="hidden" name="action" value="make_mcp_token"/>
                <label>
                    "Name "
                    <input type="text" name="name" maxlength="64" required placeholder="claude code, laptop"/>
                </label>
                <button type="submit" class="button" data-testid="make-mcp-token">"Make a token"</button>
            </form>
            {list}
        </section>
    }
    // Erased: the account page's view type is deep enough without this
    // section's (the browser build's layout queries hit their limit).
    .into_any()
}
