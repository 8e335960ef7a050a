//! `/teams/{slug}`: a team's members and loop tokens. Members see it; team
//! admins also invite and remove members and create and revoke tokens.
//! Anyone else gets a 404: a team's existence is not for outsiders.

use leptos::prelude::*;
use leptos_meta::Title;
use serde::{Deserialize, Serialize};

use crate::auth::{format_time, set_status, use_page_data, use_viewer};

/// What the server loads for a team page (only for its members).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamView {
    pub slug: String,
    pub is_admin: bool,
    pub members: Vec<TeamMemberView>,
    pub tokens: Vec<TokenView>,
    /// A token just created: shown this once.
    pub new_token: Option<String>,
    /// The outcome of the last action, or why it was refused.
    pub notice: Option<String>,
    /// Where the team's alerts go.
    pub webhook: Option<WebhookView>,
    /// A webhook signing secret just made: shown this once.
    pub new_webhook_secret: Option<String>,
    /// The latest alert deliveries, newest first.
    pub deliveries: Vec<DeliveryView>,
    /// The site's address, for the snippets that connect a loop.
    #[serde(default)]
    pub site: String,
    /// How many loops the team has.
    #[serde(default)]
    pub loops: u32,
}

/// How to send a loop's rounds here, with `token` (or a placeholder):
/// curl, Python's standard library and the connector.
pub fn connect_snippets(site: &str, token: Option<&str>) -> [(&'static str, String); 3] {
    // One blocking finding: what the loop's own check says is still wrong.
    const FINDING: &str = r#"{"target": {"id": "tests"}, "severity": "blocking", "criterion": "tests-pass", "message": "3 tests fail"}"#;
    let token = token.unwrap_or("$FIXEDPOINT_TOKEN");
    let url = format!("{site}/api/v1/loops/my-loop/rounds");
    [
        (
            "curl",
            format!(
                "curl -sS -X POST {url} \\\n  -H 'Authorization: Bearer {token}' \\\n  -H 'Content-Type: application/json' \\\n  -d '{{\"round\": 1, \"state\": \"draft-1\", \"findings\": [{FINDING}]}}'"
            ),
        ),
        (
            "Python",
            format!(
                "import json, urllib.request\n\ndef report(round_no, state, findings):\n    request = urllib.request.Request(\n        \"{url}\",\n        data=json.dumps({{\"round\": round_no, \"state\": state, \"findings\": findings}}).encode(),\n        headers={{\"Authorization\": \"Bearer {token}\", \"Content-Type\": \"application/json\"}},\n    )\n    with urllib.request.urlopen(request) as answer:\n        return json.load(answer)  # advice: continue or stop\n\nprint(report(1, \"draft-1\", [{FINDING}]))"
            ),
        ),
        ("fixedpoint push", format!("fixedpoint push --dir .loop/my-loop --to {site} --token {token} --watch")),
    ]
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookView {
    pub url: String,
    pub created_at: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeliveryView {
    pub loop_name: String,
    /// `wedged`, `cycling`, `stalled`, `thrashing` or `lost`.
    pub kind: String,
    /// `pending`, `delivered` or `failed`.
    pub status: String,
    pub attempts: i64,
    pub last_status: Option<i64>,
    pub last_error: Option<String>,
    pub created_at: i64,
    pub delivered_at: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamMemberView {
    pub email: String,
    pub role: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenView {
    pub id: i64,
    pub name: String,
    pub created_at: i64,
    pub last_used_at: Option<i64>,
    pub revoked_at: Option<i64>,
}

#[component]
pub fn TeamPage() -> impl IntoView {
    let viewer = use_viewer();
    let team = use_page_data::<TeamView>();
    match (viewer, team) {
        (None, _) => {
            set_status(401);
            view! {
                <Title text="Team"/>
                <section class="narrow">
                    <h1>"Team"</h1>
                    <p>"Sign in to see your team. " <a href="/signin">"Sign in"</a></p>
                </section>
            }
            .into_any()
        }
        (Some(_), None) => {
            set_status(404);
            view! {
                <Title text="Not found"/>
                <section class="not-found" data-testid="not-found">
                    <h1>"No such team"</h1>
                    <p>"There is no team here that you belong to."</p>
                </section>
            }
            .into_any()
        }
        (Some(_), Some(team)) => view! { <TeamSettings team/> }.into_any(),
    }
}

#[component]
fn TeamSettings(team: TeamView) -> impl IntoView {
    let slug = team.slug.clone();
    let admin = team.is_admin;
    let members = team
        .members
        .iter()
        .map(|member| {
            let remove = admin.then(|| {
                view! {
                    <form method="post" action=format!("/teams/{slug}") class="inline-form">
                        <input type="hidden" name="action" value="remove"/>
                        <input type="hidden" name="email" value=member.email.clone()/>
                        <button type="submit" class="button button-small">"Remove"</button>
                    </form>
                }
            });
            view! {
                <tr>
                    <td>{member.email.clone()}</td>
                    <td>{member.role.clone()}</td>
                    <td>{remove}</td>
                </tr>
            }
        })
        .collect_view();
    let tokens = team
        .tokens
        .iter()
        .map(|token| {
            let state = match token.revoked_at {
                Some(at) => format!("revoked {}", format_time(at)),
                None => "live".to_string(),
            };
            let revoke = (admin && token.revoked_at.is_none()).then(|| {
                view! {
                    <form method="post" action=format!("/teams/{slug}") class="inline-form">
                        <input type="hidden" name="action" value="revoke"/>
                        <input type="hidden" name="token_id" value=token.id.to_string()/>
                        <button type="submit" class="button button-small" data-testid=format!("revoke-{}", token.id)>
                            "Revoke"
                        </button>
                    </form>
                }
            });
            view! {
                <tr>
                    <td>{token.name.clone()}</td>
                    <td>{format_time(token.created_at)}</td>
                    <td>{token.last_used_at.map(format_time).unwrap_or_else(|| "never".to_string())}</td>
                    <td>{state}</td>
                    <td>{revoke}</td>
                </tr>
            }
        })
        .collect_view();
    let admin_forms = admin.then(|| {
        view! {
            <form method="post" action=format!("/teams/{slug}") class="stack-form">
                <input type="hidden" name="action" value="invite"/>
                <label for="invite-email">"Invite a member by email"</label>
                <input id="invite-email" name="email" type="email" required autocomplete="off"/>
                <button type="submit" class="button">"Invite"</button>
            </form>
            <form method="post" action=format!("/teams/{slug}") class="stack-form">
                <input type="hidden" name="action" value="create_token"/>
                <label for="token-name">"New loop token, named"</label>
                <input id="token-name" name="name" type="text" required maxlength="64" value="default"/>
                <button type="submit" class="button">"Create token"</button>
            </form>
        }
    });
    view! {
        <Title text=format!("Team {}", team.slug)/>
        <section class="narrow wide-table">
            <h1>"Team " <code>{team.slug.clone()}</code></h1>
            {team.notice.clone().map(|notice| view! { <p class="notice-box" role="status" data-testid="team-notice">{notice}</p> })}
            {team
                .new_token
                .clone()
                .map(|token| {
                    view! {
                        <div class="notice-box" data-testid="new-token">
                            <p><strong>"Your new loop token. It is shown only this once:"</strong></p>
                            <p><code class="secret">{token}</code></p>
                        </div>
                    }
                })}
            {(team.new_token.is_some() || team.loops == 0).then(|| view! { <ConnectLoop team=team.clone()/> })}
            <h2>"Members"</h2>
            <table class="data-table" data-testid="members">
                <thead>
                    <tr><th scope="col">"Email"</th><th scope="col">"Role"</th><th scope="col"><span class="visually-hidden">"Actions"</span></th></tr>
                </thead>
                <tbody>{members}</tbody>
            </table>
            <h2>"Loop tokens"</h2>
            <table class="data-table" data-testid="tokens">
                <thead>
                    <tr>
                        <th scope="col">"Name"</th>
                        <th scope="col">"Created"</th>
                        <th scope="col">"Last used"</th>
                        <th scope="col">"State"</th>
                        <th scope="col"><span class="visually-hidden">"Actions"</span></th>
                    </tr>
                </thead>
                <tbody>{tokens}</tbody>
            </table>
            {admin_forms}
            <Alerts team=team.clone()/>
        </section>
    }
}

/// What it takes to connect a loop: shown on a team without loops and
/// with a token just made (then with that token in the snippets).
#[component]
fn ConnectLoop(team: TeamView) -> impl IntoView {
    let snippets = connect_snippets(&team.site, team.new_token.as_deref())
        .into_iter()
        .map(|(name, code)| {
            view! {
                <figure class="snippet">
                    <figcaption>{name}</figcaption>
                    <pre class="config" tabindex="0" data-testid=format!("snippet-{}", name.replace(' ', "-"))><code>{code}</code></pre>
                </figure>
            }
        })
        .collect_view();
    let hint = match (team.new_token.is_some(), team.is_admin) {
        (true, _) => "Each round your loop judges goes to the site; the answer says whether to go on.",
        (false, true) => "Make a loop token below, and these lines carry it. Each round your loop judges goes to the site; the answer says whether to go on.",
        (false, false) => "A team admin makes the loop token these lines need.",
    };
    view! {
        <section class="connect" data-testid="connect-loop" aria-labelledby="connect-heading">
            <h2 id="connect-heading">"Connect a loop"</h2>
            <p>{hint}</p>
            {snippets}
        </section>
    }
}

/// The team's alert webhook and its latest deliveries.
#[component]
fn Alerts(team: TeamView) -> impl IntoView {
    let slug = team.slug.clone();
    let current = match &team.webhook {
        Some(hook) => view! {
            <p data-testid="webhook">
                "Alerts go to " <code>{hook.url.clone()}</code> ", set " {format_time(hook.created_at)} "."
            </p>
        }
        .into_any(),
        None => view! { <p data-testid="webhook">"No webhook: alerts are off."</p> }.into_any(),
    };
    let secret = team.new_webhook_secret.clone().map(|secret| {
        view! {
            <div class="notice-box" data-testid="webhook-secret">
                <p>
                    <strong>"The webhook's signing secret, shown only this once."</strong>
                    " Each call carries " <code>"Fixedpoint-Signature: t=…,v1=…"</code>
                    ": HMAC-SHA256 of " <code>"t.body"</code> " with this secret."
                </p>
                <p><code class="secret">{secret}</code></p>
            </div>
        }
    });
    let forms = team.is_admin.then(|| {
        let remove = team.webhook.is_some().then(|| {
            view! {
                <form method="post" action=format!("/teams/{slug}") class="inline-form">
                    <input type="hidden" name="action" value="remove_webhook"/>
                    <button type="submit" class="button button-small">"Turn alerts off"</button>
                </form>
            }
        });
        view! {
            <form method="post" action=format!("/teams/{slug}") class="stack-form">
                <input type="hidden" name="action" value="set_webhook"/>
                <label for="webhook-url">"Alert webhook URL"</label>
                <input id="webhook-url" name="url" type="url" required placeholder="https://hooks.example.com/fixedpoint"/>
                <button type="submit" class="button">"Save (makes a new secret)"</button>
            </form>
            {remove}
        }
    });
    let rows = team
        .deliveries
        .iter()
        .map(|delivery| {
            let result = match (delivery.status.as_str(), delivery.last_status, &delivery.last_error) {
                ("delivered", code, _) => format!(
                    "delivered{}{}",
                    code.map(|code| format!(" ({code})")).unwrap_or_default(),
                    delivery.delivered_at.map(|at| format!(" {}", format_time(at))).unwrap_or_default()
                ),
                (status, _, Some(error)) => format!("{status}: {error}"),
                (status, _, None) => status.to_string(),
            };
            view! {
                <tr>
                    <td>{format_time(delivery.created_at)}</td>
                    <td><code>{delivery.loop_name.clone()}</code></td>
                    <td>{delivery.kind.clone()}</td>
                    <td>{delivery.attempts}</td>
                    <td>{result}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <h2>"Alerts"</h2>
        <p class="muted">
            "A webhook is called when a loop becomes wedged, cycling, stalled, thrashing or lost; failed calls are retried with backoff."
        </p>
        {current}
        {secret}
        {forms}
        {(!team.deliveries.is_empty()).then(|| view! {
            <table class="data-table" data-testid="deliveries">
                <thead>
                    <tr>
                        <th scope="col">"Queued"</th>
                        <th scope="col">"Loop"</th>
                        <th scope="col">"Alert"</th>
                        <th scope="col">"Attempts"</th>
                        <th scope="col">"Result"</th>
                    </tr>
                </thead>
                <tbody>{rows}</tbody>
            </table>
        })}
    }
}
