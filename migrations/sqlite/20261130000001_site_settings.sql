-- Site settings: small named values the operator changes at run time.
CREATE TABLE site_settings (
    key        TEXT PRIMARY KEY NOT NULL,
    value      TEXT NOT NULL,
    updated_at BIGINT NOT NULL
);
