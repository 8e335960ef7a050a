-- The newsletter: issues as imported (the free part and the paid remainder
-- rendered to sanitised HTML, stored apart so a query for the free part can
-- never carry the paid one), what a reader is entitled to (subscriptions:
-- operator grants now, Stripe subscriptions with billing), private feed
-- tokens (stored as SHA-256 only) and the flagship tool's download.
CREATE TABLE issues (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    slug        TEXT NOT NULL UNIQUE,
    title       TEXT NOT NULL,
    date        TEXT NOT NULL,
    tier        TEXT NOT NULL,
    summary     TEXT NOT NULL,
    free_html   TEXT NOT NULL,
    paid_html   TEXT,
    free_words  BIGINT NOT NULL,
    paid_words  BIGINT NOT NULL,
    source_hash TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);

CREATE INDEX issues_by_date ON issues (date DESC, id DESC);

CREATE TABLE subscriptions (
    id                     INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id             BIGINT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    source                 TEXT NOT NULL,
    tier                   TEXT NOT NULL,
    status                 TEXT NOT NULL,
    stripe_subscription_id TEXT UNIQUE,
    stripe_customer_id     TEXT,
    price_id               TEXT,
    current_period_end     BIGINT,
    cancel_at_period_end   BIGINT NOT NULL DEFAULT 0,
    stripe_created         BIGINT,
    created_at             BIGINT NOT NULL,
    updated_at             BIGINT NOT NULL
);

CREATE INDEX subscriptions_by_account ON subscriptions (account_id);

CREATE TABLE feed_tokens (
    account_id BIGINT PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    token_hash TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL
);

CREATE TABLE downloads (
    name        TEXT PRIMARY KEY,
    file_name   TEXT NOT NULL,
    content     BLOB NOT NULL,
    sha256      TEXT NOT NULL,
    size        BIGINT NOT NULL,
    uploaded_at BIGINT NOT NULL
);
