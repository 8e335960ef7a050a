-- Billing: the Stripe customer of each account, founder seat holds with the
-- counter that makes "at most N seats" one guarded update, the Stripe
-- events already handled (by id: a repeat changes nothing), and the
-- founder waitlist.
CREATE TABLE stripe_customers (
    account_id  BIGINT PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    customer_id TEXT NOT NULL UNIQUE,
    created_at  BIGINT NOT NULL
);

-- One row. `used` counts seats held by checkouts in progress plus seats
-- paid for; a hold is taken by `UPDATE ... SET used = used + 1 WHERE used <
-- limit`, which both databases serialise on the row.
CREATE TABLE founder_seat_counter (
    id   BIGINT PRIMARY KEY,
    used BIGINT NOT NULL
);
INSERT INTO founder_seat_counter (id, used) VALUES (1, 0);

-- state: held (a checkout in progress), paid (a founder subscription that
-- counts), released (Stripe said the checkout died), ended (the founder
-- subscription ended), refused (paid after its hold was released when no
-- seat was left: the subscription is cancelled).
CREATE TABLE seat_holds (
    id                     INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id             BIGINT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    state                  TEXT NOT NULL,
    checkout_session_id    TEXT UNIQUE,
    checkout_url           TEXT,
    stripe_subscription_id TEXT,
    created_at             BIGINT NOT NULL,
    expires_at             BIGINT NOT NULL,
    updated_at             BIGINT NOT NULL
);

CREATE INDEX seat_holds_by_state ON seat_holds (state, created_at);
CREATE INDEX seat_holds_by_account ON seat_holds (account_id);

CREATE TABLE stripe_events (
    id           TEXT PRIMARY KEY,
    type         TEXT NOT NULL,
    received_at  BIGINT NOT NULL
);

CREATE TABLE founder_waitlist (
    email      TEXT PRIMARY KEY,
    created_at BIGINT NOT NULL
);
