-- Personal MCP tokens: a founder's bearer credential for /mcp. Only the
-- SHA-256 of the secret is kept; a revoked token stays listed.
CREATE TABLE mcp_tokens (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id   BIGINT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    token_hash   TEXT NOT NULL UNIQUE,
    created_at   BIGINT NOT NULL,
    last_used_at BIGINT,
    revoked_at   BIGINT
);

CREATE INDEX mcp_tokens_by_account ON mcp_tokens (account_id);
