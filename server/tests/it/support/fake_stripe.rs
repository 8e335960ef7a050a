//! The local fake of Stripe's HTTP API (`end2end/support/fake-stripe.mjs`),
//! run as a child process: the real Stripe library talks to it through
//! `STRIPE_API_BASE`, and it delivers signed webhooks like Stripe.

use std::process::Stdio;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

pub const SECRET_KEY: &str = "sk_test_fixedpoint";
pub const WEBHOOK_SECRET: &str = "whsec_fixedpoint_test";

pub struct FakeStripe {
    pub base: String,
    http: reqwest::Client,
    _child: Child,
}

impl FakeStripe {
    pub async fn start() -> FakeStripe {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../end2end/support/fake-stripe.mjs");
        let mut child = Command::new("node")
            .arg(script)
            .args(["--port", "0", "--exit-with-stdin"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("node runs the fake Stripe (end2end/support/fake-stripe.mjs)");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).await.unwrap();
        let port = serde_json::from_str::<Value>(&line).expect("the fake prints {\"port\":N}")["port"]
            .as_u64()
            .unwrap();
        FakeStripe { base: format!("http://127.0.0.1:{port}"), http: reqwest::Client::new(), _child: child }
    }

    /// The environment that points the site at this fake.
    pub fn env(&self, founder_seats: u32) -> Vec<(&'static str, String)> {
        vec![
            ("STRIPE_SECRET_KEY", SECRET_KEY.to_string()),
            ("STRIPE_WEBHOOK_SECRET", WEBHOOK_SECRET.to_string()),
            ("STRIPE_API_BASE", self.base.clone()),
            ("STRIPE_PRICE_PRO_MONTHLY", "price_pro_monthly".to_string()),
            ("STRIPE_PRICE_PRO_YEARLY", "price_pro_yearly".to_string()),
            ("STRIPE_PRICE_FOUNDER_YEARLY", "price_founder_yearly".to_string()),
            ("FIXEDPOINT_FOUNDER_SEATS", founder_seats.to_string()),
        ]
    }

    /// Sends webhooks to the site at `site` (its base URL).
    pub async fn deliver_to(&self, site: &str) {
        self.post(
            "/_fake/config",
            serde_json::json!({"webhook_url": format!("{site}/stripe/webhook"), "webhook_secret": WEBHOOK_SECRET}),
        )
        .await;
    }

    pub async fn post(&self, path: &str, body: Value) -> Value {
        let response = self.http.post(format!("{}{path}", self.base)).json(&body).send().await.unwrap();
        let status = response.status();
        let value: Value = response.json().await.unwrap_or(Value::Null);
        assert!(status.is_success(), "fake {path}: {status} {value}");
        value
    }

    pub async fn get(&self, path: &str) -> Value {
        self.http.get(format!("{}{path}", self.base)).send().await.unwrap().json().await.unwrap()
    }

    /// The fake's current `kind` object (`sessions`, `subscriptions`, ...) with this id.
    pub async fn object(&self, kind: &str, id: &str) -> Value {
        let state = self.get("/_fake/state").await;
        state[kind]
            .as_array()
            .and_then(|all| all.iter().find(|object| object["id"] == id).cloned())
            .unwrap_or(Value::Null)
    }

    /// How many `kind` objects the fake holds.
    pub async fn count(&self, kind: &str) -> usize {
        self.get("/_fake/state").await[kind].as_array().map_or(0, Vec::len)
    }
}
