-- One founder checkout in progress per reader: parallel clicks cannot hold
-- several seats for one account.
CREATE UNIQUE INDEX seat_holds_one_held_per_account ON seat_holds (account_id) WHERE state = 'held';
