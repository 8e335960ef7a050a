//! The data behind the team page, loaded before the page renders (the
//! viewer middleware puts it in the request's extensions), and the team
//! page's forms. (The loops pages are the dashboard's, the admin page is
//! `crate::admin`'s.) Every handler checks who is asking: non-members of a team
//! get 404 (a team's existence is not for outsiders), members who are not
//! admins get 403, signed-out visitors 401.

use app::pages::team::{DeliveryView, TeamMemberView, TeamView, TokenView, WebhookView};
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::post;
use axum::Router;
use leptos::prelude::provide_context;
use serde::Deserialize;

use super::{Account, AccountsError, Team, TeamRole};
use crate::web::{render_page, AppState};

/// The team page's forms all post to the page's own address, so the answer
/// (a notice, a token shown once) is the page at the address the browser
/// shows; `action` says which form it was.
pub fn router() -> Router<AppState> {
    Router::new().route("/teams/{slug}", post(team_action))
}

#[derive(Debug, Deserialize)]
struct ActionForm {
    action: Option<String>,
    email: Option<String>,
    name: Option<String>,
    token_id: Option<String>,
    url: Option<String>,
}

async fn team_action(State(state): State<AppState>, Path(slug): Path<String>, request: Request) -> Response {
    let (account, team) = match team_admin(&state, request.extensions(), &slug).await {
        Ok(found) => found,
        Err(refusal) => return refusal,
    };
    let (parts, body) = request.into_parts();
    let form = match crate::web::read_form::<ActionForm>(body).await {
        Ok(form) => form,
        Err((status, notice)) => {
            let request = Request::from_parts(parts, Body::empty());
            return answer(&state, request, &team, status, notice, None).await;
        }
    };
    let request = Request::from_parts(parts, Body::empty());
    match form.action.as_deref() {
        Some("invite") => {
            invite_member(&state, request, &account, &team, form.email.unwrap_or_default()).await
        }
        Some("remove") => remove_member(&state, request, &team, form.email.unwrap_or_default()).await,
        Some("create_token") => create_token(&state, request, &team, form.name.unwrap_or_default()).await,
        Some("set_webhook") => set_webhook(&state, request, &team, form.url.unwrap_or_default()).await,
        Some("remove_webhook") => match state.store.remove_team_webhook(team.id).await {
            Ok(removed) => {
                let notice = if removed {
                    "Alerts are off: the webhook was removed."
                } else {
                    "There was no webhook."
                };
                answer(&state, request, &team, StatusCode::OK, notice.into(), None).await
            }
            Err(error) => internal(AccountsError::from(error)),
        },
        Some("revoke") => match form.token_id.as_deref().map(str::parse::<i64>) {
            Some(Ok(id)) => revoke_token(&state, request, &team, id).await,
            _ => {
                answer(
                    &state,
                    request,
                    &team,
                    StatusCode::BAD_REQUEST,
                    "token_id: not a token of this team".into(),
                    None,
                )
                .await
            }
        },
        _ => answer(&state, request, &team, StatusCode::BAD_REQUEST, "action: unknown".into(), None).await,
    }
}

/// Loads what the page at `path` (with `query`) shows to `account`, into
/// `extensions`.
pub async fn load(
    state: &AppState,
    path: &str,
    account: &Account,
    extensions: &mut axum::http::Extensions,
) -> Result<(), AccountsError> {
    if let Some(slug) = path.strip_prefix("/teams/").filter(|slug| !slug.contains('/')) {
        if let Some((team, role)) = member_team(state, slug, account).await? {
            extensions.insert(team_view(state, &team, role, None, None).await?);
        }
    }
    Ok(())
}

/// The team `slug` and the account's role in it, if they are a member.
async fn member_team(
    state: &AppState,
    slug: &str,
    account: &Account,
) -> Result<Option<(Team, TeamRole)>, AccountsError> {
    let Some(team) = state.store.team_by_slug(slug).await? else {
        return Ok(None);
    };
    Ok(state.store.team_role(team.id, account.id).await?.map(|role| (team, role)))
}

async fn team_view(
    state: &AppState,
    team: &Team,
    role: TeamRole,
    new_token: Option<String>,
    notice: Option<String>,
) -> Result<TeamView, AccountsError> {
    let members = state
        .store
        .team_members(team.id)
        .await?
        .into_iter()
        .map(|member| TeamMemberView {
            email: member.email,
            role: match member.role {
                TeamRole::Admin => "admin".into(),
                TeamRole::Member => "member".into(),
            },
        })
        .collect();
    let tokens = state
        .store
        .loop_tokens(team.id)
        .await?
        .into_iter()
        .map(|token| TokenView {
            id: token.id,
            name: token.name,
            created_at: token.created_at,
            last_used_at: token.last_used_at,
            revoked_at: token.revoked_at,
        })
        .collect();
    let webhook = state.store.team_webhook(team.id).await?.map(|hook| WebhookView {
        // Some services put a secret in the URL: members see its host.
        url: if role == TeamRole::Admin {
            hook.url
        } else {
            reqwest::Url::parse(&hook.url)
                .ok()
                .and_then(|url| url.host_str().map(|host| format!("{}://{host}/…", url.scheme())))
                .unwrap_or_else(|| "(hidden)".to_string())
        },
        created_at: hook.created_at,
    });
    let deliveries = state
        .store
        .alert_deliveries(team.id, 20)
        .await?
        .into_iter()
        .map(|delivery| DeliveryView {
            loop_name: delivery.loop_name,
            kind: delivery.kind,
            status: delivery.status,
            attempts: delivery.attempts,
            last_status: delivery.last_status,
            last_error: delivery.last_error,
            created_at: delivery.created_at,
            delivered_at: delivery.delivered_at,
        })
        .collect();
    let loops = state
        .store
        .team_loop_count(team.id)
        .await
        .map_err(|error| AccountsError::Dashboard(error.to_string()))?;
    Ok(TeamView {
        site: state.config.public_url.trim_end_matches('/').to_string(),
        loops,
        slug: team.slug.clone(),
        is_admin: role == TeamRole::Admin,
        members,
        tokens,
        new_token,
        notice,
        webhook,
        new_webhook_secret: None,
        deliveries,
    })
}

/// Who is asking, and may they act on the team? The refusal is the
/// response to give.
async fn team_admin(
    state: &AppState,
    extensions: &axum::http::Extensions,
    slug: &str,
) -> Result<(Account, Team), Response> {
    let account =
        super::web::signed_in(extensions).ok_or_else(|| StatusCode::UNAUTHORIZED.into_response())?;
    match member_team(state, slug, &account).await {
        Ok(Some((team, TeamRole::Admin))) => Ok((account, team)),
        Ok(Some((_, TeamRole::Member))) => {
            Err((StatusCode::FORBIDDEN, "only the team's admins may do this").into_response())
        }
        Ok(None) => Err(StatusCode::NOT_FOUND.into_response()),
        Err(error) => Err(internal(error)),
    }
}

fn internal(error: AccountsError) -> Response {
    tracing::error!(%error, "team page");
    StatusCode::INTERNAL_SERVER_ERROR.into_response()
}

/// Renders the team page with a notice (and a new token), after an action.
async fn answer(
    state: &AppState,
    request: Request,
    team: &Team,
    status: StatusCode,
    notice: String,
    new_token: Option<String>,
) -> Response {
    answer_with(state, request, team, status, notice, new_token, None).await
}

async fn answer_with(
    state: &AppState,
    request: Request,
    team: &Team,
    status: StatusCode,
    notice: String,
    new_token: Option<String>,
    new_webhook_secret: Option<String>,
) -> Response {
    let (mut parts, _) = request.into_parts();
    parts.uri = format!("/teams/{}", team.slug).parse().unwrap_or(parts.uri);
    match team_view(state, team, TeamRole::Admin, new_token, Some(notice)).await {
        Ok(mut view) => {
            view.new_webhook_secret = new_webhook_secret;
            render_page(state, parts, status, move || provide_context(view.clone())).await
        }
        Err(error) => internal(error),
    }
}

/// `action=set_webhook`: the team's alert webhook, with a new signing
/// secret shown once.
async fn set_webhook(state: &AppState, request: Request, team: &Team, url: String) -> Response {
    if let Err(problem) = crate::alerts::check_url(&url, state.config.allow_private_webhooks) {
        return answer(state, request, team, StatusCode::BAD_REQUEST, problem.to_string(), None).await;
    }
    match state.store.set_team_webhook(team.id, &url).await {
        Ok(secret) => {
            let notice = "Alerts go to this webhook now; its signing secret is shown below once.".to_string();
            answer_with(state, request, team, StatusCode::OK, notice, None, Some(secret)).await
        }
        Err(error) => internal(AccountsError::from(error)),
    }
}

async fn invite_member(
    state: &AppState,
    request: Request,
    account: &Account,
    team: &Team,
    email: String,
) -> Response {
    match state.store.add_team_member(&team.slug, &email, TeamRole::Member).await {
        Ok(added) => {
            let email = super::normalize_email(&email).unwrap_or(email);
            if !added {
                let notice = format!("{email} is already a member.");
                return answer(state, request, team, StatusCode::OK, notice, None).await;
            }
            let body = format!(
                "{} added you to the team {} on Fixed Point.\n\nSign in with this address to see its loops:\n{}/signin\n",
                account.email, team.slug, state.config.public_url
            );
            let subject = "You were added to a team on Fixed Point";
            if let Err(error) = state.mailer.send(&state.store, &email, subject, &body).await {
                tracing::error!(%error, "could not queue an invitation");
            }
            let notice = format!("Added {email}; they were sent a note.");
            answer(state, request, team, StatusCode::OK, notice, None).await
        }
        Err(AccountsError::BadEmail { .. }) => {
            let notice = "email: enter an address such as ada@example.com".to_string();
            answer(state, request, team, StatusCode::BAD_REQUEST, notice, None).await
        }
        Err(error) => internal(error),
    }
}

async fn remove_member(state: &AppState, request: Request, team: &Team, email: String) -> Response {
    match state.store.remove_team_member(team.id, &email).await {
        Ok(true) => Redirect::to(&format!("/teams/{}", team.slug)).into_response(),
        Ok(false) => {
            let notice = format!("email: {email} is not a member.");
            answer(state, request, team, StatusCode::NOT_FOUND, notice, None).await
        }
        Err(AccountsError::LastAdmin) => {
            answer(state, request, team, StatusCode::CONFLICT, AccountsError::LastAdmin.to_string(), None)
                .await
        }
        Err(AccountsError::BadEmail { .. }) => {
            answer(state, request, team, StatusCode::BAD_REQUEST, "email: not a valid address".into(), None)
                .await
        }
        Err(error) => internal(error),
    }
}

async fn create_token(state: &AppState, request: Request, team: &Team, name: String) -> Response {
    let state = state.clone();
    match state.store.create_loop_token(&team.slug, name.trim()).await {
        Ok(created) => {
            let notice = format!("Created the token {:?}.", created.token.name);
            answer(&state, request, team, StatusCode::OK, notice, Some(created.secret)).await
        }
        Err(error @ AccountsError::BadTokenName { .. }) => {
            answer(&state, request, team, StatusCode::BAD_REQUEST, format!("name: {error}"), None).await
        }
        Err(error) => internal(error),
    }
}

async fn revoke_token(state: &AppState, request: Request, team: &Team, id: i64) -> Response {
    match state.store.revoke_loop_token(team.id, id).await {
        Ok(true) => Redirect::to(&format!("/teams/{}", team.slug)).into_response(),
        // Another team's token id, or one already revoked: nothing here.
        Ok(false) => {
            answer(
                state,
                request,
                team,
                StatusCode::NOT_FOUND,
                "token_id: no live token of this team has it".into(),
                None,
            )
            .await
        }
        Err(error) => internal(error),
    }
}
