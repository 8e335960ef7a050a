//! The command line: `fixedpoint serve` and the operator's subcommands.
//! Each subcommand validates its input, prints a clear error and exits
//! non-zero on bad input; results go to standard output, logs to standard
//! error.

use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};
use tokio::net::TcpListener;

use crate::config::Config;
use crate::site;
use crate::store::Store;
use crate::web;
use crate::web::AppState;

#[derive(Debug, Parser)]
#[command(
    name = "fixedpoint",
    version,
    about = "Fixed Point: tools for agent loops that know when they have finished"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the site (FIXEDPOINT_ADDR, DATABASE_URL, PUBLIC_URL, LEPTOS_SITE_ROOT).
    Serve,
    /// Audit agent-loop source files for their exit conditions. Exit code: 0
    /// CONVERGES, 1 DIVERGES, 2 UNDEFINED, 3 usage or read error (the worst
    /// over all files).
    Audit(crate::audit::AuditArgs),
    /// Teams: `team create SLUG`.
    #[command(subcommand)]
    Team(TeamCommand),
    /// Loop tokens: `token create --team SLUG [--name NAME]` prints a new token once.
    #[command(subcommand)]
    Token(TokenCommand),
    /// Send a file-based loop's iterations to a server as rounds.
    Push(PushArgs),
    /// Print a one-time sign-in URL for EMAIL (a support tool), alone on the last line.
    LoginLink { email: String },
    /// Operators: `admin grant EMAIL` makes EMAIL an operator (creating the account).
    #[command(subcommand)]
    Admin(AdminCommand),
    /// Newsletter issues: `issues import DIR` imports or updates every *.md in DIR.
    #[command(subcommand)]
    Issues(IssuesCommand),
    /// The newsletter's subscribers as CSV: `subscribers import FILE [--confirmed]`, `subscribers export`.
    #[command(subcommand)]
    Subscribers(SubscribersCommand),
    /// A complimentary subscription: `grant EMAIL --tier pro [--days N]` (never a founder seat).
    Grant {
        email: String,
        /// Only `pro`: founder seats are sold, never granted.
        #[arg(long)]
        tier: String,
        /// How long it lasts; without it, until revoked.
        #[arg(long)]
        days: Option<u32>,
    },
    /// Print a new private feed base URL for a paying subscriber, alone on the
    /// last line. Only a hash of it is stored, so this makes a new one and the
    /// subscriber's earlier URL stops working.
    FeedUrl { email: String },
    /// Print a new personal MCP token for a founder, alone on the last line
    /// (only its hash is stored; revoke it on /account).
    McpToken {
        email: String,
        /// A name to tell it apart on /account.
        #[arg(long, default_value = "made by the command line")]
        name: String,
    },
    /// The flagship tool's source archive: `flagship upload FILE` publishes it
    /// for Pro and Founder readers (replacing any earlier upload).
    #[command(subcommand)]
    Flagship(FlagshipCommand),
}

#[derive(Debug, Subcommand)]
pub enum IssuesCommand {
    /// Import or update every *.md issue file in DIR. Exit code 0 when all
    /// went in, 1 when some file was refused (each is named with its line).
    Import { dir: std::path::PathBuf },
    /// Queue issue SLUG for every confirmed subscriber not yet sent it (one
    /// ledger row each, in one transaction) and print the count per tier;
    /// the server's deliverer sends them through SMTP_URL.
    Send {
        slug: String,
        /// Only count: queue nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Print the ledger counts of issue SLUG's sends: queued, sent, failed, bounced.
    Delivery { slug: String },
}

#[derive(Debug, Subcommand)]
pub enum SubscribersCommand {
    /// Import the `email` column of FILE (a Substack, Buttondown, Ghost or
    /// Mailchimp export). Every row is checked first: a bad one is named by
    /// its line and nothing is imported. Without --confirmed each new address
    /// is mailed a confirmation link; addresses that unsubscribed or bounced
    /// are left as they are.
    Import {
        file: std::path::PathBuf,
        /// You hold these readers' consent: they go on the list at once.
        #[arg(long)]
        confirmed: bool,
    },
    /// Write the list as CSV to standard output (email, status, source,
    /// created_at, confirmed_at).
    Export,
}

#[derive(Debug, Subcommand)]
pub enum FlagshipCommand {
    /// Publish FILE (at most 50 MiB) as the flagship download.
    Upload { file: std::path::PathBuf },
}

/// The largest flagship archive accepted.
const FLAGSHIP_MAX_BYTES: u64 = 50 * 1024 * 1024;

#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Make EMAIL an operator of the site.
    Grant { email: String },
}

pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Serve => serve().await.map(|()| ExitCode::SUCCESS),
        Command::Audit(args) => {
            let code = crate::audit::run_audit_command(
                &args,
                &mut std::io::stdin().lock(),
                &mut std::io::stdout().lock(),
                &mut std::io::stderr().lock(),
            );
            Ok(ExitCode::from(code))
        }
        Command::Team(command) => team(command).await,
        Command::Token(command) => token(command).await,
        Command::Push(args) => push(args).await,
        Command::LoginLink { email } => login_link(&email).await,
        Command::Admin(AdminCommand::Grant { email }) => {
            let email = crate::accounts::normalize_email(&email)?;
            let store = command_store().await?;
            let account = store.grant_operator(&email).await?;
            store.close().await;
            say(&format!("{} is an operator", account.email))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Issues(IssuesCommand::Import { dir }) => {
            let store = command_store().await?;
            let report = crate::newsletter::import::import_dir(&store, &dir).await;
            store.close().await;
            let report = report?;
            report.write(&mut std::io::stdout().lock(), &mut std::io::stderr().lock())?;
            Ok(if report.all_stored() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
        }
        Command::Issues(IssuesCommand::Send { slug, dry_run }) => issues_send(&slug, dry_run).await,
        Command::Issues(IssuesCommand::Delivery { slug }) => {
            let store = command_store().await?;
            let counts = store.delivery_counts(&slug).await;
            store.close().await;
            let counts = counts?;
            say(&format!(
                "queued: {}\nsent: {}\nfailed: {}\nbounced: {}",
                counts.queued, counts.sent, counts.failed, counts.bounced
            ))?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Subscribers(SubscribersCommand::Import { file, confirmed }) => {
            subscribers_import(&file, confirmed).await
        }
        Command::Subscribers(SubscribersCommand::Export) => {
            let store = command_store().await?;
            let mut out = std::io::stdout().lock();
            let written = store.export_subscribers(&mut out).await;
            store.close().await;
            written?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Grant { email, tier, days } => grant(&email, &tier, days).await,
        Command::FeedUrl { email } => feed_url(&email).await,
        Command::McpToken { email, name } => mcp_token(&email, &name).await,
        Command::Flagship(FlagshipCommand::Upload { file }) => flagship_upload(&file).await,
    }
}

async fn serve() -> anyhow::Result<()> {
    let config = Config::from_env()?;
    let store = Store::open(&config.database_url)
        .await
        .with_context(|| format!("opening {}", redact_url(&config.database_url)))?;
    match web::bundle::Bundle::read(&config.site_root).id() {
        Some(id) => tracing::info!(build = id, "serving the site bundle of build {id}"),
        None => tracing::warn!(
            site_root = %config.site_root.display(),
            "no built site bundle found (pkg/build-id): pages render but do not hydrate (run `make run` to build it)"
        ),
    }
    match crate::newsletter::seed_samples(&store).await {
        Ok(0) => {}
        Ok(loaded) => tracing::info!(loaded, "the archive was empty: loaded the sample issues"),
        Err(error) => tracing::warn!(%error, "could not load the sample issues"),
    }
    let listener =
        TcpListener::bind(config.addr).await.with_context(|| format!("binding {}", config.addr))?;
    let addr = listener.local_addr()?;
    tracing::info!(%addr, database = store.backend().name(), "serving Fixed Point on http://{addr}");
    let state = AppState::new(config, store.clone());
    let sweeper = crate::loops::spawn_lost_run_sweeper(store.clone(), crate::loops::LOST_SWEEP_EVERY);
    let traces_sweeper = crate::traces::spawn_traces_sweeper(
        store.clone(),
        state.live.clone(),
        state.config.traces_settle_ms,
        crate::traces::sweep_every(state.config.traces_settle_ms),
    );
    let seat_poller = state.founders.spawn_poller(
        store.clone(),
        state.config.founder_seats,
        crate::billing::live::POLL_EVERY,
    );
    let hold_sweeper = crate::billing::sweeper::spawn(state.clone(), crate::billing::sweeper::SWEEP_EVERY);
    let newsletter_deliverer = newsletter_deliverer(&state);
    let alert_deliverer = crate::alerts::spawn_deliverer(
        store.clone(),
        crate::alerts::DELIVER_EVERY,
        state.config.allow_private_webhooks,
    );
    let relay = match store.backend() {
        crate::store::Backend::Postgres => Some(
            state
                .live
                .start_postgres_relay(&state.config.database_url)
                .await
                .context("listening for live events on PostgreSQL")?,
        ),
        crate::store::Backend::Sqlite => None,
    };
    let seat_listener = match store.backend() {
        crate::store::Backend::Postgres => Some(
            state
                .founders
                .start_postgres_listener(
                    &state.config.database_url,
                    store.clone(),
                    state.config.founder_seats,
                )
                .await
                .context("listening for founder seat changes on PostgreSQL")?,
        ),
        crate::store::Backend::Sqlite => None,
    };
    // The peer address reaches handlers for per-client rate limits.
    let stylesheet = state.bundle.stylesheet();
    let service = site::router(state).into_make_service_with_connect_info::<std::net::SocketAddr>();
    // TCP_NODELAY, and hyper's own bare refusals (414, a request line it
    // cannot read) given a body as the router's are.
    let listener = web::listener::site_listener(listener, &stylesheet);
    axum::serve(listener, service).with_graceful_shutdown(shutdown_signal()).await?;
    sweeper.abort();
    traces_sweeper.abort();
    seat_poller.abort();
    hold_sweeper.abort();
    alert_deliverer.abort();
    if let Some(deliverer) = newsletter_deliverer {
        deliverer.abort();
    }
    if let Some(relay) = relay {
        relay.abort();
    }
    if let Some(listener) = seat_listener {
        listener.abort();
    }
    store.close().await;
    tracing::info!("stopped");
    Ok(())
}

/// The newsletter's deliverer, when there is a relay to send through.
fn newsletter_deliverer(state: &AppState) -> Option<tokio::task::JoinHandle<()>> {
    let config = &state.config;
    let Some(relay) = config.smtp_url.as_deref().and_then(crate::mail::SmtpRelay::parse) else {
        tracing::info!("no SMTP_URL: queued newsletter sends wait until the server has a relay");
        return None;
    };
    let from = config.mail_from.parse().ok()?;
    Some(crate::newsletter::deliverer::spawn(
        state.store.clone(),
        crate::newsletter::deliverer::DelivererConfig {
            relay,
            from,
            public_url: config.public_url.clone(),
            rate_per_second: config.mail_rate_per_second,
            connections: config.mail_connections,
            retry_ms: i64::from(config.mail_retry_ms),
            dkim: config.dkim.as_ref().and_then(|dkim| dkim.signing().ok()).map(std::sync::Arc::new),
        },
    ))
}

async fn subscribers_import(file: &std::path::Path, confirmed: bool) -> anyhow::Result<ExitCode> {
    let name = file.display().to_string();
    let bytes = std::fs::read(file).with_context(|| format!("{name}: cannot read the file"))?;
    let addresses = match crate::newsletter::subscriber_csv::read_addresses(&bytes, &name) {
        Ok(addresses) => addresses,
        Err(problems) => {
            for problem in &problems {
                eprintln!("{problem}");
            }
            eprintln!("{name}: {} bad rows; nothing was imported", problems.len());
            return Ok(ExitCode::FAILURE);
        }
    };
    let config = Config::from_env()?;
    let store = command_store().await?;
    let report = store.import_subscribers(&addresses, confirmed).await;
    let report = match report {
        Ok(report) => report,
        Err(error) => {
            store.close().await;
            return Err(error.into());
        }
    };
    let mailed = report.to_confirm.len();
    if mailed > 0 {
        let state = AppState::new(config, store.clone());
        for outcome in report.to_confirm.iter().cloned() {
            crate::newsletter::subscribe::mail_outcome(&state, outcome).await;
        }
    }
    store.close().await;
    say(&format!(
        "{name}: {} addresses\nadded: {}\nconfirmed: {}\nalready subscribed: {}\nleft unsubscribed: {}\nleft bounced: {}\nconfirmation links mailed: {mailed}",
        addresses.len(),
        report.added,
        report.confirmed,
        report.already,
        report.kept_unsubscribed,
        report.kept_bounced
    ))?;
    Ok(ExitCode::SUCCESS)
}

async fn issues_send(slug: &str, dry_run: bool) -> anyhow::Result<ExitCode> {
    let store = command_store().await?;
    let queued = store.queue_send(slug, dry_run).await;
    store.close().await;
    let queued = queued?;
    let verb = if dry_run { "would queue" } else { "queued" };
    let earlier = if queued.earlier > 0 {
        format!(" (besides {} queued by an earlier send)", queued.earlier)
    } else {
        String::new()
    };
    say(&format!(
        "{verb} {} ({:?}, {}) for {} recipients{earlier}\nfree: {}\npro: {}\nfounder: {}",
        queued.slug,
        queued.title,
        queued.issue_tier.as_str(),
        queued.total(),
        queued.free,
        queued.pro,
        queued.founder
    ))?;
    if !dry_run && std::env::var("SMTP_URL").map_or(true, |url| url.trim().is_empty()) {
        eprintln!("note: the server sends through SMTP_URL; without it the queued messages wait");
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, Subcommand)]
pub enum TeamCommand {
    /// Create a team: SLUG is 2 to 40 lowercase letters, digits and single dashes.
    Create { slug: String },
    /// Add EMAIL to the team SLUG (creating the account); `--admin` lets them manage it.
    AddMember {
        slug: String,
        email: String,
        #[arg(long)]
        admin: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create a loop token for a team; it is printed once, alone on the last line.
    Create {
        #[arg(long)]
        team: String,
        #[arg(long, default_value = "default")]
        name: String,
    },
}

#[derive(Debug, clap::Args)]
pub struct PushArgs {
    /// The loop directory, such as .loop/NAME; its name is the loop's name.
    #[arg(long)]
    pub dir: std::path::PathBuf,
    /// The server's base URL, such as https://fixedpoint.example.
    #[arg(long)]
    pub to: String,
    /// A loop token of the team (or FIXEDPOINT_TOKEN, which keeps it out of process lists).
    #[arg(long, env = "FIXEDPOINT_TOKEN", hide_env_values = true)]
    pub token: String,
    /// Keep following the directory and send new iterations as they appear.
    #[arg(long)]
    pub watch: bool,
}

/// Opens the store of `DATABASE_URL` (or the default SQLite file) for the
/// operator's commands.
async fn command_store() -> anyhow::Result<Store> {
    let url = crate::config::database_url_from(
        std::env::var("DATABASE_URL").ok().filter(|url| !url.trim().is_empty()),
    )?;
    Store::open(&url).await.with_context(|| format!("opening {}", redact_url(&url)))
}

/// Writes command results to standard output; logs stay on standard error.
fn say(line: &str) -> anyhow::Result<()> {
    use std::io::Write;
    writeln!(std::io::stdout().lock(), "{line}").context("writing to standard output")
}

async fn team(command: TeamCommand) -> anyhow::Result<ExitCode> {
    match command {
        TeamCommand::Create { slug } => {
            if !crate::accounts::valid_team_slug(&slug) {
                anyhow::bail!(crate::accounts::AccountsError::BadSlug { slug });
            }
            let store = command_store().await?;
            let team = store.create_team(&slug).await?;
            store.close().await;
            say(&format!("created team {}", team.slug))?;
            Ok(ExitCode::SUCCESS)
        }
        TeamCommand::AddMember { slug, email, admin } => {
            let email = crate::accounts::normalize_email(&email)?;
            let role =
                if admin { crate::accounts::TeamRole::Admin } else { crate::accounts::TeamRole::Member };
            let store = command_store().await?;
            let added = store.add_team_member(&slug, &email, role).await;
            store.close().await;
            if added? {
                say(&format!("added {email} to team {slug}"))?;
            } else {
                say(&format!("{email} is already a member of team {slug}"))?;
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `login-link EMAIL`: a sign-in URL under `PUBLIC_URL`, alone on the last line.
async fn login_link(email: &str) -> anyhow::Result<ExitCode> {
    let email = crate::accounts::normalize_email(email)?;
    // The same base URL `serve` would use: PUBLIC_URL, else the listen address.
    let public_url = Config::from_env()?.public_url;
    let store = command_store().await?;
    let secret = store.create_signin_token(&email).await;
    store.close().await;
    say(&format!("a sign-in link for {email}; it works once, for 15 minutes:"))?;
    say(&format!("{public_url}/signin/verify?token={}", secret?))?;
    Ok(ExitCode::SUCCESS)
}

async fn grant(email: &str, tier: &str, days: Option<u32>) -> anyhow::Result<ExitCode> {
    let email = crate::accounts::normalize_email(email)?;
    match tier {
        "pro" => {}
        "founder" => anyhow::bail!("--tier founder: founder seats are sold through checkout, never granted"),
        other => anyhow::bail!("--tier {other:?}: the only tier that can be granted is pro"),
    }
    if days == Some(0) {
        anyhow::bail!("--days 0: give a positive number of days, or leave it out for no end");
    }
    let store = command_store().await?;
    let granted = async {
        let account = store.ensure_account(&email).await?;
        store.grant_pro(account.id, days).await.map_err(anyhow::Error::from)
    }
    .await;
    store.close().await;
    match granted? {
        Some(until) => say(&format!("granted Pro to {email} until {}", app::auth::format_time(until)))?,
        None => say(&format!("granted Pro to {email} with no end"))?,
    }
    Ok(ExitCode::SUCCESS)
}

async fn feed_url(email: &str) -> anyhow::Result<ExitCode> {
    let email = crate::accounts::normalize_email(email)?;
    let public_url = Config::from_env()?.public_url;
    let store = command_store().await?;
    let made = async {
        let account = store
            .account_id_by_email(&email)
            .await?
            .ok_or_else(|| crate::newsletter::NewsletterError::NoSuchAccount { email: email.clone() })?;
        if store.reader_access(account).await?.tier == crate::newsletter::Tier::Free {
            return Err(crate::newsletter::NewsletterError::NotPaying { email: email.clone() });
        }
        store.rotate_feed_token(account).await
    }
    .await;
    store.close().await;
    let token = made?;
    say(&format!("a new private feed base URL for {email} (any earlier one no longer works):"))?;
    say(&crate::newsletter::pages::feed_base_url(&public_url, &token))?;
    Ok(ExitCode::SUCCESS)
}

async fn mcp_token(email: &str, name: &str) -> anyhow::Result<ExitCode> {
    let email = crate::accounts::normalize_email(email)?;
    let store = command_store().await?;
    let made = async {
        let account = store
            .account_id_by_email(&email)
            .await?
            .ok_or_else(|| anyhow::anyhow!("no account has the email {email:?}"))?;
        if store.reader_access(account).await?.tier != crate::newsletter::Tier::Founder {
            anyhow::bail!("{email} is not a founder: MCP tokens are for founders");
        }
        Ok(store.create_mcp_token(account, name).await?)
    }
    .await;
    store.close().await;
    let made = made?;
    say(&format!("a new MCP token for {email} (shown once; only its hash is kept):"))?;
    say(&made.secret)?;
    Ok(ExitCode::SUCCESS)
}

async fn flagship_upload(file: &std::path::Path) -> anyhow::Result<ExitCode> {
    let meta = std::fs::metadata(file).with_context(|| format!("{}: cannot read it", file.display()))?;
    if !meta.is_file() {
        anyhow::bail!("{}: not a file", file.display());
    }
    if meta.len() > FLAGSHIP_MAX_BYTES {
        anyhow::bail!(
            "{}: {} bytes; the flagship archive may be at most {FLAGSHIP_MAX_BYTES}",
            file.display(),
            meta.len()
        );
    }
    if meta.len() == 0 {
        anyhow::bail!("{}: the file is empty", file.display());
    }
    let bytes = std::fs::read(file).with_context(|| format!("{}: cannot read it", file.display()))?;
    let name = file
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| "flagship.tar.gz".to_string());
    let store = command_store().await?;
    let stored = store.put_download(crate::newsletter::pages::FLAGSHIP, &name, &bytes).await;
    store.close().await;
    say(&format!(
        "published {name} ({} bytes, sha256 {}) for Pro and Founder readers",
        bytes.len(),
        stored?
    ))?;
    Ok(ExitCode::SUCCESS)
}

async fn token(command: TokenCommand) -> anyhow::Result<ExitCode> {
    match command {
        TokenCommand::Create { team, name } => {
            let store = command_store().await?;
            let created = store.create_loop_token(&team, &name).await?;
            store.close().await;
            say(&format!(
                "created loop token {:?} for team {team}; it is shown only this once:",
                created.token.name
            ))?;
            say(&created.secret)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `push`: exit 0 when every entry was sent or already stored, 2 when some
/// were skipped (unreadable or refused; each is named on standard error).
async fn push(args: PushArgs) -> anyhow::Result<ExitCode> {
    use crate::connector::{self, PushOptions, PushReport};
    let options = PushOptions { dir: args.dir, to: args.to, token: args.token };
    let show = |report: &PushReport| -> anyhow::Result<bool> {
        for problem in report.problems.iter().chain(&report.rejected) {
            tracing::warn!("skipped {problem}");
        }
        for round in &report.sent {
            say(&format!("round {}: {} ({}): {}", round.round, round.class, round.advice, round.reason))?;
            if round.operator_stop {
                say("operator: STOP")?;
            }
            if let Some(steer) = &round.steer {
                say(&format!("operator steer: {steer}"))?;
            }
        }
        if let Some(state) = &report.heartbeat {
            say(&format!("run {}: {state}", report.run.as_deref().unwrap_or("-")))?;
        }
        Ok(report.problems.is_empty() && report.rejected.is_empty())
    };
    if args.watch {
        let mut failure = None;
        connector::watch(&options, connector::WATCH_EVERY, shutdown_signal(), |result| match result {
            Ok(report) => {
                if let Err(error) = show(report) {
                    failure = Some(error);
                }
            }
            Err(error) => tracing::warn!(%error, "push failed; retrying"),
        })
        .await?;
        return failure.map_or(Ok(ExitCode::SUCCESS), Err);
    }
    let client = connector::http_client()?;
    let report = connector::push_once(&client, &options).await?;
    let clean = show(&report)?;
    say(&format!(
        "{}: sent {} rounds, {} already stored, {} skipped",
        report.loop_name,
        report.sent.len(),
        report.already_stored,
        report.problems.len() + report.rejected.len()
    ))?;
    Ok(if clean { ExitCode::SUCCESS } else { ExitCode::from(2) })
}

/// Resolves on SIGINT or SIGTERM, whichever comes first.
pub async fn shutdown_signal() {
    let interrupt = async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::error!(%error, "could not listen for SIGINT");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::error!(%error, "could not listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => tracing::info!("SIGINT received, shutting down"),
        () = terminate => tracing::info!("SIGTERM received, shutting down"),
    }
}

/// A database URL without its password, for messages.
pub fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            let credentials = &url[scheme_end + 3..at];
            match credentials.split_once(':') {
                Some((user, _)) => format!("{}{}:***{}", &url[..scheme_end + 3], user, &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::redact_url;

    #[test]
    fn passwords_never_reach_messages() {
        assert_eq!(redact_url("postgres://fp:secret@db:5432/fp"), "postgres://fp:***@db:5432/fp");
        assert_eq!(redact_url("postgres://fp@db/fp"), "postgres://fp@db/fp");
        assert_eq!(redact_url("sqlite://fixedpoint.db?mode=rwc"), "sqlite://fixedpoint.db?mode=rwc");
    }
}
