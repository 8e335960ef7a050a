"""What the delivery crash test and benchmark share: a fresh database on
SQLite or the local PostgreSQL, the SMTP sink, a `fixedpoint serve` process,
and a list of confirmed subscribers with one issue to send them."""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
END2END = os.path.dirname(HERE)
ROOT = os.path.dirname(END2END)
SINK = os.path.join(END2END, "support", "smtp_sink.py")
PG_ADMIN = os.environ.get("FIXEDPOINT_TEST_PG", "postgres://postgres@127.0.0.1:5432/postgres")

ISSUE = """---
title: "The ledger that survives"
slug: ledger-that-survives
date: 2026-12-03
tier: pro
summary: "A send that resumes after a crash."
---
Every recipient has a row, and a row stays queued until the relay answered.

```python
while not converged(state):
    state = step(state)
```

<!-- paywall -->

The paid part: {padding}
"""


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Database:
    """A fresh database, dropped (PostgreSQL) or deleted (SQLite) on close."""

    def __init__(self, backend, workdir):
        self.backend = backend
        if backend == "sqlite":
            self.url = "sqlite://%s?mode=rwc" % os.path.join(workdir, "bench.db")
            self.name = None
        else:
            self.name = "fp_delivery_%d_%d" % (os.getpid(), int(time.time() * 1000))
            subprocess.run(["psql", PG_ADMIN, "-q", "-c", "CREATE DATABASE %s" % self.name], check=True)
            self.url = PG_ADMIN.rsplit("/", 1)[0] + "/" + self.name

    def close(self):
        if self.name:
            subprocess.run(
                ["psql", PG_ADMIN, "-q", "-c", "DROP DATABASE IF EXISTS %s WITH (FORCE)" % self.name],
                check=False,
            )


def run(binary, database, *args, env=None):
    full = dict(os.environ, DATABASE_URL=database.url, RUST_LOG="warn", **(env or {}))
    done = subprocess.run([binary, *args], env=full, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit("fixedpoint %s failed: %s%s" % (" ".join(args), done.stdout, done.stderr))
    return done.stdout


def seed(binary, database, workdir, recipients, padding_words=400):
    """Confirmed subscribers `reader{n}@example.com` and the issue to send."""
    csv = os.path.join(workdir, "list.csv")
    with open(csv, "w") as out:
        out.write("email\n")
        for n in range(recipients):
            out.write("reader%d@example.com\n" % n)
    run(binary, database, "subscribers", "import", csv, "--confirmed")
    issues = os.path.join(workdir, "issues")
    os.makedirs(issues, exist_ok=True)
    with open(os.path.join(issues, "issue.md"), "w") as out:
        out.write(ISSUE.format(padding=" ".join("word%d" % n for n in range(padding_words))))
    run(binary, database, "issues", "import", issues)
    return "ledger-that-survives"


def counts(binary, database, slug):
    text = run(binary, database, "issues", "delivery", slug)
    return {name: int(value) for name, value in (line.split(": ") for line in text.strip().splitlines())}


class Sink:
    def __init__(self, python, *args):
        self.process = subprocess.Popen(
            [python, SINK, *args], stdout=subprocess.PIPE, text=True
        )
        line = self.process.stdout.readline()
        if not line.startswith("port "):
            sys.exit("the SMTP sink did not start (end2end/.venv needs aiosmtpd)")
        self.port = int(line.split()[1])

    def stop(self):
        """Stops the sink; answers its last line (`received N bytes B`)."""
        self.process.terminate()
        out, _ = self.process.communicate(timeout=30)
        return out.strip().splitlines()[-1] if out.strip() else ""


class Server:
    def __init__(self, binary, database, smtp_port, workdir, extra_env=None):
        self.addr = "127.0.0.1:%d" % free_port()
        env = dict(
            os.environ,
            DATABASE_URL=database.url,
            FIXEDPOINT_ADDR=self.addr,
            PUBLIC_URL="https://fixedpoint.example",
            SMTP_URL="smtp://127.0.0.1:%d" % smtp_port,
            FIXEDPOINT_MAIL_FROM="Fixed Point <news@fixedpoint.example>",
            LEPTOS_SITE_ROOT=os.path.join(workdir, "site"),
            RUST_LOG="warn",
            **(extra_env or {}),
        )
        self.log = open(os.path.join(workdir, "server.log"), "a")
        self.process = subprocess.Popen([binary, "serve"], env=env, stdout=self.log, stderr=self.log)
        deadline = time.time() + 30
        while True:
            try:
                socket.create_connection(tuple([self.addr.split(":")[0], int(self.addr.split(":")[1])]), 1).close()
                break
            except OSError:
                if self.process.poll() is not None or time.time() > deadline:
                    sys.exit("fixedpoint serve did not start; see %s" % self.log.name)
                time.sleep(0.1)

    def peak_rss_kb(self):
        with open("/proc/%d/status" % self.process.pid) as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
        return 0

    def kill(self):
        self.process.kill()
        self.process.wait()

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)


def binary_from(argv_bin):
    binary = argv_bin or os.path.join(ROOT, "target", "release", "fixedpoint")
    if not os.path.exists(binary):
        sys.exit("no %s: build it with `cargo build --release -p server` or pass --bin" % binary)
    return binary


def python_of_venv():
    python = os.path.join(END2END, ".venv", "bin", "python")
    if not os.path.exists(python):
        sys.exit("no end2end/.venv: `make test` (or .ci/lib.sh's ensure_smtp_sink) makes it")
    return python


def workspace():
    return tempfile.mkdtemp(prefix="fixedpoint-delivery-")


def clean(workdir):
    shutil.rmtree(workdir, ignore_errors=True)
