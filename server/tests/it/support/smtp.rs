//! A real SMTP server for the delivery tests: `end2end/support/smtp_sink.py`
//! (aiosmtpd, from `end2end/.venv`), which writes every message it accepts
//! as a JSON line and can refuse (550) or defer (451) chosen addresses.

use std::path::PathBuf;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

pub struct SmtpSink {
    pub port: u16,
    out: PathBuf,
    _dir: tempfile::TempDir,
    _child: Child,
}

/// One message as the sink received it, for one recipient.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Received {
    pub to: String,
    pub headers: std::collections::HashMap<String, String>,
    pub text: Option<String>,
    pub html: Option<String>,
    pub raw: String,
}

pub fn python() -> String {
    std::env::var("FIXEDPOINT_TEST_PYTHON")
        .unwrap_or_else(|_| format!("{}/../end2end/.venv/bin/python", env!("CARGO_MANIFEST_DIR")))
}

impl SmtpSink {
    /// Starts the sink; `reject` get 550, `defer` get 451 for their first N tries.
    pub async fn start(reject: &[&str], defer: &[(&str, u32)]) -> SmtpSink {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("mail.jsonl");
        let mut command = Command::new(python());
        command
            .arg(format!("{}/../end2end/support/smtp_sink.py", env!("CARGO_MANIFEST_DIR")))
            .arg("--out")
            .arg(&out)
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true);
        for address in reject {
            command.arg("--reject").arg(address);
        }
        for (address, count) in defer {
            command.arg("--defer").arg(format!("{address}={count}"));
        }
        let mut child = command.spawn().unwrap_or_else(|error| {
            panic!(
                "the SMTP sink runs on end2end/.venv's Python with aiosmtpd (`make test` installs it): {error}"
            )
        });
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("the SMTP sink starts within 30 s")
            .unwrap()
            .expect("the SMTP sink prints its port");
        let port = line.strip_prefix("port ").expect("`port N`").trim().parse().unwrap();
        SmtpSink { port, out, _dir: dir, _child: child }
    }

    pub fn url(&self) -> String {
        format!("smtp://127.0.0.1:{}", self.port)
    }

    /// Every message received so far.
    pub fn received(&self) -> Vec<Received> {
        let Ok(text) = std::fs::read_to_string(&self.out) else { return Vec::new() };
        text.lines().filter(|line| !line.is_empty()).map(|line| serde_json::from_str(line).unwrap()).collect()
    }
}
