#!/usr/bin/env node
// A local fake of the slice of Stripe's HTTP API that Fixed Point uses, so end-to-end tests can
// run the real async-stripe client (1.0.0-rc.10) without reaching Stripe. Node built-ins only.
//
//   node end2end/support/fake-stripe.mjs [--port N] [--exit-with-stdin]
//     prints exactly one line {"port":N} on stdout once listening; exits on SIGTERM/SIGINT (and,
//     with --exit-with-stdin, when its stdin closes, e.g. when the parent test process dies).
//     Env: FAKE_STRIPE_WEBHOOK_URL, FAKE_STRIPE_WEBHOOK_SECRET (default whsec_fake_stripe),
//     FAKE_STRIPE_DEBUG=1 (logs requests and deliveries to stderr).
//   import { startFakeStripe } from './fake-stripe.mjs'
//     const fake = await startFakeStripe({ port: 0, webhookUrl, webhookSecret }) // {port,url,close(),state}
//
// Stripe API (form-encoded bodies, `Authorization: Bearer sk_...`, Idempotency-Key honoured):
//   POST /v1/customers, GET|POST /v1/customers/{id}
//   POST /v1/checkout/sessions, GET /v1/checkout/sessions/{id}, POST /v1/checkout/sessions/{id}/expire
//   POST /v1/billing_portal/sessions
//   GET|POST|DELETE /v1/subscriptions/{id}
// Pages: GET /checkout/{id} (Pay / Cancel), GET /portal/{id}.
// Test control (JSON or form in, JSON out, no auth), see `control()` below:
//   POST /_fake/config, /_fake/reset, /_fake/fail-next, /_fake/sign,
//   POST /_fake/checkout/sessions/{id}/complete|expire, /_fake/subscriptions/{id}/update,
//   POST /_fake/events/{id}/deliver, GET /_fake/requests, /_fake/state, /_fake/events
//
// Every object is shaped to deserialize with async-stripe 1.0.0-rc.10 (miniserde: fields that are
// not Option<..> are required, Option fields may be null or absent). Checked against the sources:
//   Customer             async-stripe-shared/src/customer.rs, invoice_setting_customer_setting.rs
//   CheckoutSession      async-stripe-shared/src/checkout_session.rs, payment_pages_checkout_session_
//                        {automatic_tax,custom_text,customer_details,total_details}.rs, checkout_session_item.rs
//   BillingPortalSession async-stripe-billing/src/billing_portal_session/types.rs
//   Subscription         async-stripe-shared/src/subscription.rs, subscription_item.rs,
//                        subscription_automatic_tax.rs, subscriptions_resource_billing_mode.rs,
//                        subscriptions_resource_subscription_invoice_settings.rs, connect_account_reference.rs
//   Price, Plan          async-stripe-shared/src/price.rs, recurring.rs, plan.rs
//   Invoice              async-stripe-shared/src/invoice.rs, invoice_line_item.rs, automatic_tax.rs,
//                        invoices_payment_settings.rs, invoices_resource_status_transitions.rs,
//                        billing_bill_resource_invoicing_{parents_invoice_*,lines_parents_*,pricing_*}.rs
//   List<T>              async-stripe-types/src/pagination.rs (data, has_more, url)
//   Event, errors        async-stripe-shared/src/event.rs, notification_event_{data,request}.rs,
//                        error.rs, api_errors.rs; async-stripe-webhook/src/webhook.rs (signature check)
// The subscription also carries the pre-2025 top-level current_period_start/end (ignored by rc.10,
// which reads them from items.data[i]; handy for code that reads the raw JSON).

import http from 'node:http';
import crypto from 'node:crypto';
import { realpathSync } from 'node:fs';
import { URL, pathToFileURL } from 'node:url';

// stripe_shared::version::VERSION in rc.10; a different value only makes the webhook parser warn.
const API_VERSION = '2026-09-30.endive';
const DEFAULT_SECRET = 'whsec_fake_stripe';
const DEBUG = !!process.env.FAKE_STRIPE_DEBUG;
const log = (...a) => DEBUG && console.error('[fake-stripe]', ...a);
const now = () => Math.floor(Date.now() / 1000);
const clone = (o) => structuredClone(o);
const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const newId = (prefix, len = 24) => `${prefix}_${[...crypto.randomBytes(len)].map((b) => ALNUM[b % 62]).join('')}`;
const list = (data, url) => ({ object: 'list', data, has_more: false, url });
const asArray = (v) => (v == null ? [] : Array.isArray(v) ? v : typeof v === 'object' ? Object.values(v) : [v]);
const asBool = (v, dflt) => (v === undefined || v === null || v === '' ? dflt : v === true || v === 'true' || v === '1' || v === 'on');
const asInt = (v) => (v === undefined || v === null || v === '' ? undefined : Number.parseInt(v, 10));
const esc = (s) => String(s ?? '').replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const money = (cents) => `$${(cents / 100).toFixed(2)}`;

// ---------------------------------------------------------------------------------------------
// Stripe's form encoding: `line_items[0][price]=x&metadata[account]=7&expand[]=subscription`.
// async-stripe encodes with serde_qs 1.x: Vec<T> as `k[0]`, `k[1]`; nesting brackets literal and
// brackets inside a key segment as %5B (or, with serde_qs's form-encoding feature, the nesting
// brackets as %5B and those inside a segment as %255B), so split first, then decode each segment.
export function parseForm(text) {
  const root = {};
  for (const pair of String(text || '').split('&')) {
    if (!pair) continue;
    const eq = pair.indexOf('=');
    const rawKey = eq < 0 ? pair : pair.slice(0, eq);
    const val = eq < 0 ? '' : decode(pair.slice(eq + 1));
    const key = rawKey.includes('[') ? rawKey : decode(rawKey);
    const m = key.match(/^([^[\]]+)((?:\[[^[\]]*\])*)$/);
    const path = (m ? [m[1], ...[...m[2].matchAll(/\[([^[\]]*)\]/g)].map((x) => x[1])] : [key]).map(decode);
    if (path.some((p) => p === '__proto__' || p === 'constructor' || p === 'prototype')) continue;
    let node = root;
    path.forEach((seg, i) => {
      const k = seg === '' ? String(Object.keys(node).length) : seg; // `k[]` appends
      if (i === path.length - 1) node[k] = val;
      else node = node[k] && typeof node[k] === 'object' ? node[k] : (node[k] = {});
    });
  }
  return arrayify(root);
}
function decode(s) {
  try { return decodeURIComponent(s.replace(/\+/g, ' ')); } catch { return s; }
}
// Objects keyed 0..n become arrays, except metadata (whose keys are the caller's own).
function arrayify(v, key) {
  if (!v || typeof v !== 'object') return v;
  for (const k of Object.keys(v)) v[k] = arrayify(v[k], k);
  const ks = Object.keys(v);
  if (key === 'metadata' || !ks.length || !ks.every((k) => /^\d+$/.test(k))) return v;
  return ks.map(Number).sort((a, b) => a - b).map((i) => v[i]);
}
// Key-order-independent fingerprint of parsed params (HashMap order differs between requests).
const canonical = (v) => (v && typeof v === 'object'
  ? (Array.isArray(v) ? `[${v.map(canonical).join(',')}]` : `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(',')}}`)
  : JSON.stringify(v));

// ---------------------------------------------------------------------------------------------
// State, prices and object builders.
function newState(config) {
  return {
    config, customers: new Map(), sessions: new Map(), subscriptions: new Map(), invoices: new Map(),
    portalSessions: new Map(), events: [], deliveries: [], requests: [], idempotency: new Map(),
    failNext: [], queue: Promise.resolve(), invoiceSeq: 0,
  };
}
function resetState(s) {
  for (const k of ['customers', 'sessions', 'subscriptions', 'invoices', 'portalSessions', 'idempotency']) s[k].clear();
  for (const k of ['events', 'deliveries', 'requests', 'failNext']) s[k].length = 0;
  s.invoiceSeq = 0;
}

// Any price id starting with `price_` counts as configured, except `price_missing`. Interval comes
// from the id ("month" -> month, else year); amounts follow PRODUCT.md (overridable via /_fake/config
// {prices: {id: {unit_amount, interval, product}}}).
function priceInfo(state, id) {
  if (typeof id !== 'string' || !id.startsWith('price_') || id === 'price_missing') return null;
  const o = state.config.prices?.[id] || {};
  const interval = o.interval || (id.includes('month') ? 'month' : 'year');
  const amount = o.unit_amount ?? (id.includes('founder') ? 30000 : interval === 'month' ? 1500 : 25000);
  return { id, interval, amount, product: o.product || `prod_${id.slice(6).split('_')[0]}` };
}
const PRICE_CREATED = 1735689600;
const priceObject = (p) => ({
  id: p.id, object: 'price', active: true, billing_scheme: 'per_unit', created: PRICE_CREATED, currency: 'usd',
  livemode: false, lookup_key: null, metadata: {}, nickname: null, product: p.product,
  recurring: { interval: p.interval, interval_count: 1, meter: null, trial_period_days: null, usage_type: 'licensed' },
  tax_behavior: 'unspecified', type: 'recurring', unit_amount: p.amount, unit_amount_decimal: String(p.amount),
});
const planObject = (p) => ({
  id: p.id, object: 'plan', active: true, amount: p.amount, amount_decimal: String(p.amount), billing_scheme: 'per_unit',
  created: PRICE_CREATED, currency: 'usd', interval: p.interval, interval_count: 1, livemode: false, metadata: {},
  nickname: null, product: p.product, trial_period_days: null, usage_type: 'licensed',
});
// Stripe bills a month after Jan 31 on the last day of February (never spilling into March).
function addInterval(ts, interval) {
  const d = new Date(ts * 1000);
  const day = d.getUTCDate();
  if (interval === 'month') d.setUTCMonth(d.getUTCMonth() + 1); else d.setUTCFullYear(d.getUTCFullYear() + 1);
  if (d.getUTCDate() !== day) d.setUTCDate(0);
  return Math.floor(d.getTime() / 1000);
}

function createCustomer(state, p) {
  const id = newId('cus', 14);
  const c = {
    id, object: 'customer', address: null, balance: 0, created: now(), currency: null, default_source: null,
    delinquent: false, description: p.description ?? null, discount: null, email: p.email ?? null,
    invoice_prefix: id.slice(4, 12).toUpperCase(),
    invoice_settings: { custom_fields: null, default_payment_method: null, footer: null, rendering_options: null },
    livemode: false, metadata: { ...(p.metadata || {}) }, name: p.name ?? null, next_invoice_sequence: 1,
    phone: p.phone ?? null, preferred_locales: asArray(p.preferred_locales), shipping: null, tax_exempt: 'none', test_clock: null,
  };
  state.customers.set(id, c);
  return c;
}
// Stripe's metadata update semantics: keys merge, an empty value deletes the key.
function mergeMetadata(target, patch) {
  for (const [k, v] of Object.entries(patch || {})) if (v === '') delete target[k]; else target[k] = String(v);
}

function createSubscription(state, customer, lines, metadata) {
  const id = newId('sub', 24);
  const t = now();
  const end = addInterval(t, lines[0].price.interval);
  const items = lines.map((l) => ({
    id: newId('si', 14), object: 'subscription_item', billing_thresholds: null, created: t, current_period_end: end,
    current_period_start: t, discounts: [], metadata: {}, plan: planObject(l.price), price: priceObject(l.price),
    quantity: l.quantity, subscription: id, tax_rates: [],
  }));
  const sub = {
    id, object: 'subscription', application: null, application_fee_percent: null,
    automatic_tax: { disabled_reason: null, enabled: false, liability: null }, billing_cycle_anchor: t,
    billing_mode: { type: 'classic' }, billing_schedules: [], billing_thresholds: null, cancel_at: null,
    cancel_at_period_end: false, canceled_at: null, cancellation_details: { comment: null, feedback: null, reason: null },
    collection_method: 'charge_automatically', created: t, currency: 'usd', current_period_end: end,
    current_period_start: t, customer, days_until_due: null, default_payment_method: null, default_source: null,
    default_tax_rates: [], description: null, discounts: [], ended_at: null,
    invoice_settings: { account_tax_ids: null, issuer: { type: 'self' } },
    items: list(items, `/v1/subscription_items?subscription=${id}`), latest_invoice: null, livemode: false,
    metadata: { ...(metadata || {}) }, next_pending_invoice_item_invoice: null, on_behalf_of: null, pause_collection: null,
    pending_invoice_item_interval: null, pending_setup_intent: null, pending_update: null, schedule: null,
    start_date: t, status: 'active', test_clock: null, transfer_data: null, trial_end: null, trial_start: null,
  };
  state.subscriptions.set(id, sub);
  return sub;
}

function createInvoice(state, sub, reason, paid) {
  const id = newId('in', 24);
  const t = now();
  const cust = state.customers.get(sub.customer);
  const lines = sub.items.data.map((si) => ({
    id: newId('il', 24), object: 'line_item', amount: si.price.unit_amount * si.quantity, currency: 'usd',
    description: `${si.quantity} × ${si.price.product} (at ${money(si.price.unit_amount)} / ${si.price.recurring.interval})`,
    discount_amounts: [], discountable: true, discounts: [], invoice: id, livemode: false, metadata: {},
    parent: { type: 'subscription_item_details', subscription_item_details: {
      invoice_item: null, proration: false, proration_details: { credited_items: null }, subscription: sub.id, subscription_item: si.id } },
    period: { start: si.current_period_start, end: si.current_period_end }, pretax_credit_amounts: [],
    pricing: { type: 'price_details', price_details: { price: si.price.id, product: si.price.product }, unit_amount_decimal: si.price.unit_amount_decimal },
    quantity: si.quantity, subscription: sub.id, subtotal: si.price.unit_amount * si.quantity, taxes: [],
  }));
  const total = lines.reduce((n, l) => n + l.amount, 0);
  const inv = {
    id, object: 'invoice', account_country: 'US', account_name: 'Fixed Point (fake Stripe)', amount_due: total,
    amount_overpaid: 0, amount_paid: paid ? total : 0, amount_remaining: paid ? 0 : total, amount_shipping: 0,
    attempt_count: 1, attempted: true, auto_advance: !paid,
    automatic_tax: { disabled_reason: null, enabled: false, liability: null, provider: null, status: null },
    billing_reason: reason, collection_method: 'charge_automatically', created: t, currency: 'usd', customer: sub.customer,
    customer_email: cust?.email ?? null, customer_name: cust?.name ?? null, customer_tax_exempt: 'none', customer_tax_ids: [],
    default_tax_rates: [], description: null, discounts: [], due_date: null, effective_at: t, ending_balance: 0,
    hosted_invoice_url: null, invoice_pdf: null, issuer: { type: 'self' }, last_finalization_error: null,
    lines: list(lines, `/v1/invoices/${id}/lines`), livemode: false, metadata: {},
    next_payment_attempt: paid ? null : t + 3 * 86400, number: `FAKE-${String(++state.invoiceSeq).padStart(4, '0')}`,
    parent: { type: 'subscription_details', quote_details: null, subscription_details: { metadata: { ...sub.metadata }, subscription: sub.id } },
    payment_settings: { default_mandate: null, payment_method_options: null, payment_method_types: null },
    period_end: t, period_start: t, post_payment_credit_notes_amount: 0, pre_payment_credit_notes_amount: 0,
    starting_balance: 0, status: paid ? 'paid' : 'open',
    status_transitions: { finalized_at: t, marked_uncollectible_at: null, paid_at: paid ? t : null, voided_at: null },
    subscription: sub.id, subtotal: total, subtotal_excluding_tax: total, total, total_excluding_tax: total,
    total_discount_amounts: [], total_pretax_credit_amounts: [], total_taxes: [], webhooks_delivered_at: t,
  };
  state.invoices.set(id, inv);
  sub.latest_invoice = id;
  return inv;
}

// Replaces id strings with objects for `expand[]=...` (dotted paths allowed, e.g. subscription.latest_invoice).
function expandObj(state, obj, paths) {
  const out = clone(obj);
  for (const path of paths) {
    const [head, ...rest] = String(path).split('.');
    if (head === 'line_items' && out.object === 'checkout.session') {
      out.line_items = clone(state.sessions.get(out.id)?.lineItems ?? list([], `/v1/checkout/sessions/${out.id}/line_items`));
      continue;
    }
    const v = out[head];
    const target = typeof v === 'string' ? lookup(state, v) : v;
    if (target && typeof target === 'object') out[head] = rest.length ? expandObj(state, target, [rest.join('.')]) : clone(target);
  }
  return out;
}
function lookup(state, id) {
  if (id.startsWith('cus_')) return state.customers.get(id);
  if (id.startsWith('sub_')) return state.subscriptions.get(id);
  if (id.startsWith('in_')) return state.invoices.get(id);
  if (id.startsWith('cs_')) return state.sessions.get(id)?.obj;
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Events and webhook delivery: `Stripe-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret, "t.payload")>`.
export const sign = (payload, secret, t = now()) =>
  `t=${t},v1=${crypto.createHmac('sha256', secret).update(`${t}.${payload}`).digest('hex')}`;

function emit(state, type, object, { previous, request } = {}) {
  const event = {
    id: newId('evt', 24), object: 'event', api_version: API_VERSION, created: now(),
    data: previous ? { object: clone(object), previous_attributes: previous } : { object: clone(object) },
    livemode: false, pending_webhooks: 1, request: request || { id: null, idempotency_key: null }, type,
  };
  const rec = { id: event.id, type, event, payload: JSON.stringify(event), deliveries: [] };
  state.events.push(rec);
  return rec;
}
function postOnce(url, payload, signature) {
  return new Promise((resolve) => {
    const req = http.request(url, {
      method: 'POST', agent: false, timeout: 15000,
      headers: { 'content-type': 'application/json', 'stripe-signature': signature, 'content-length': Buffer.byteLength(payload),
        'user-agent': 'Stripe/1.0 (+https://stripe.com/docs/webhooks)' },
    }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (c) => { body += c; }).on('end', () => resolve({ status: res.statusCode, body: body.slice(0, 500) }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (e) => resolve({ status: null, error: e.message }));
    req.end(payload);
  });
}
async function deliver(state, rec) {
  const url = state.config.webhook_url;
  const d = { event_id: rec.id, type: rec.type, url: url || null, status: null, at: new Date().toISOString() };
  if (!url) d.error = 'no webhook_url configured';
  else {
    try {
      Object.assign(d, await postOnce(url, rec.payload, sign(rec.payload, state.config.webhook_secret || DEFAULT_SECRET)));
    } catch (e) { d.error = String(e?.message || e); }
  }
  log('deliver', rec.type, rec.id, '->', d.status ?? d.error);
  rec.deliveries.push(d);
  state.deliveries.push(d);
  return d;
}
// One queue for all deliveries, so webhooks arrive in the order the events happened.
function enqueue(state, recs) {
  const p = state.queue.then(async () => { const out = []; for (const r of recs) out.push(await deliver(state, r)); return out; });
  state.queue = p.catch(() => {});
  return p;
}

// ---------------------------------------------------------------------------------------------
// Stripe API.
const ok = (body, events = []) => ({ status: 200, body, events });
function stripeError(status, message, { type = 'invalid_request_error', code, param } = {}) {
  const error = { type, message };
  if (code) error.code = code;
  if (param) error.param = param;
  if (code) error.doc_url = `https://stripe.com/docs/error-codes/${code.replace(/_/g, '-')}`;
  return { status, body: { error } };
}
const noSuch = (kind, id) => stripeError(404, `No such ${kind}: '${id}'`, { code: 'resource_missing', param: 'id' });

function apiKey(req) {
  const h = req.headers.authorization || '';
  let key = null;
  if (/^Bearer /i.test(h)) key = h.slice(7).trim();
  else if (/^Basic /i.test(h)) key = Buffer.from(h.slice(6), 'base64').toString('utf8').split(':')[0];
  return key;
}

function createSession(state, base, p) {
  if (!p.mode) return stripeError(400, 'Missing required param: mode.', { code: 'parameter_missing', param: 'mode' });
  if (!['subscription', 'payment', 'setup'].includes(p.mode)) {
    return stripeError(400, `Invalid mode: must be one of payment, setup, or subscription`, { code: 'parameter_invalid_string', param: 'mode' });
  }
  if (p.customer && p.customer_email) {
    return stripeError(400, 'You may only specify one of these parameters: customer, customer_email.', { param: 'customer_email' });
  }
  if (p.customer && !state.customers.has(p.customer)) {
    return stripeError(400, `No such customer: '${p.customer}'`, { code: 'resource_missing', param: 'customer' });
  }
  const items = asArray(p.line_items);
  if (p.mode !== 'setup' && !items.length) {
    return stripeError(400, `Missing required param: line_items.`, { code: 'parameter_missing', param: 'line_items' });
  }
  const lines = [];
  for (const [i, li] of items.entries()) {
    const param = `line_items[${i}][price]`;
    if (!li?.price) return stripeError(400, `Missing required param: ${param}.`, { code: 'parameter_missing', param });
    const price = priceInfo(state, li.price);
    if (!price) return stripeError(400, `No such price: '${li.price}'`, { code: 'resource_missing', param });
    lines.push({ price, quantity: asInt(li.quantity) ?? 1 });
  }
  if (p.mode === 'payment' && lines.length) { // every fake price is recurring
    return stripeError(400, 'You specified `payment` mode but passed a recurring price. Either switch to `subscription` mode or use only one-time prices.', { param: 'line_items[0][price]' });
  }
  const created = now();
  let expiresAt = created + 86400;
  if (p.expires_at !== undefined) { // Stripe: 30 minutes to 24 hours after creation (a minute of slack here)
    expiresAt = asInt(p.expires_at);
    if (!(expiresAt >= created + 1800 - 60 && expiresAt <= created + 86400 + 60)) {
      return stripeError(400, 'The `expires_at` timestamp must be between 30 minutes and 24 hours from Checkout Session creation.', { param: 'expires_at' });
    }
  }
  const id = newId('cs_test', 58);
  const total = lines.reduce((n, l) => n + l.price.amount * l.quantity, 0);
  const obj = {
    id, object: 'checkout.session', allow_promotion_codes: null, amount_subtotal: total, amount_total: total,
    automatic_tax: { enabled: false, liability: null, provider: null, status: null }, billing_address_collection: null,
    cancel_url: p.cancel_url ?? null, client_reference_id: p.client_reference_id ?? null, client_secret: null,
    consent: null, consent_collection: null, created, currency: 'usd', custom_fields: [],
    custom_text: { after_submit: null, shipping_address: null, submit: null, terms_of_service_acceptance: null },
    customer: p.customer ?? null, customer_creation: p.customer ? null : 'always', customer_details: null,
    customer_email: p.customer_email ?? null, expires_at: expiresAt, invoice: null, invoice_creation: null,
    livemode: false, locale: null, metadata: { ...(p.metadata || {}) }, mode: p.mode, payment_intent: null,
    payment_link: null, payment_method_collection: 'always', payment_method_types: ['card'],
    payment_status: p.mode === 'setup' ? 'no_payment_required' : 'unpaid', recovered_from: null, setup_intent: null,
    shipping_address_collection: null, shipping_cost: null, shipping_options: [], status: 'open', submit_type: null,
    subscription: null, success_url: p.success_url ?? null,
    total_details: { amount_discount: 0, amount_shipping: 0, amount_tax: 0 }, ui_mode: 'hosted_page',
    url: `${base}/checkout/${id}`,
  };
  const lineItems = list(lines.map((l) => ({
    id: newId('li', 24), object: 'item', amount_discount: 0, amount_subtotal: l.price.amount * l.quantity, amount_tax: 0,
    amount_total: l.price.amount * l.quantity, currency: 'usd', description: l.price.product, price: priceObject(l.price), quantity: l.quantity,
  })), `/v1/checkout/sessions/${id}/line_items`);
  state.sessions.set(id, { obj, lines, lineItems, subscriptionData: p.subscription_data || {} });
  return ok(expandObj(state, obj, asArray(p.expand)));
}

// Only an open session can be expired; expiring it queues checkout.session.expired.
function expireSession(state, id, request) {
  const rec = state.sessions.get(id);
  if (!rec) return noSuch('checkout.session', id);
  if (rec.obj.status !== 'open') {
    return stripeError(400, `Only Checkout Sessions with a status in ["open"] can be expired. This Checkout Session has a status of "${rec.obj.status}".`, { param: 'session' });
  }
  Object.assign(rec.obj, { status: 'expired', url: null });
  return ok(clone(rec.obj), [emit(state, 'checkout.session.expired', rec.obj, { request })]);
}

// Marks an open session paid and creates what Stripe would: the customer (if the session had only an
// email), the subscription and its first invoice. Events in the order the brief fixes:
// checkout.session.completed, customer.subscription.created, invoice.paid.
// `force` completes a session that is no longer open (a payment racing the session's expiry).
function completeSession(state, id, force = false) {
  const rec = state.sessions.get(id);
  if (!rec) return noSuch('checkout.session', id);
  const s = rec.obj;
  if (s.status === 'complete' || (s.status !== 'open' && !force)) return stripeError(400, `Checkout Session ${id} is ${s.status}, not open.`);
  if (!s.customer) s.customer = createCustomer(state, { email: s.customer_email || 'buyer@example.com' }).id;
  const email = state.customers.get(s.customer)?.email ?? s.customer_email;
  Object.assign(s, {
    status: 'complete', payment_status: s.mode === 'setup' ? 'no_payment_required' : 'paid', url: null,
    customer_details: { address: null, email, name: null, phone: null, tax_exempt: 'none', tax_ids: [] },
  });
  let sub = null;
  let inv = null;
  if (s.mode === 'subscription') {
    sub = createSubscription(state, s.customer, rec.lines, rec.subscriptionData.metadata);
    inv = createInvoice(state, sub, 'subscription_create', true);
    Object.assign(s, { subscription: sub.id, invoice: inv.id });
  }
  const events = [emit(state, 'checkout.session.completed', s)];
  if (sub) events.push(emit(state, 'customer.subscription.created', sub), emit(state, 'invoice.paid', inv));
  return { status: 200, body: { session: clone(s), subscription: sub && clone(sub), invoice: inv && clone(inv) }, events };
}

function cancelNow(sub) {
  const t = now();
  Object.assign(sub, { status: 'canceled', canceled_at: sub.canceled_at ?? t, ended_at: t, cancel_at: null, cancel_at_period_end: false });
  sub.cancellation_details.reason ??= 'cancellation_requested';
}
const periodEnd = (sub) => sub.items.data[0]?.current_period_end ?? sub.current_period_end;
// Cancelling at period end sets cancel_at to the period end and canceled_at to now; undoing clears both.
// `prev` collects the old values for the event's data.previous_attributes.
function setCancelAtPeriodEnd(sub, v, prev) {
  if (v === sub.cancel_at_period_end) return;
  Object.assign(prev, { cancel_at_period_end: sub.cancel_at_period_end, cancel_at: sub.cancel_at, canceled_at: sub.canceled_at });
  Object.assign(sub, { cancel_at_period_end: v, cancel_at: v ? periodEnd(sub) : null, canceled_at: v ? now() : null });
  sub.cancellation_details.reason = v ? 'cancellation_requested' : null;
}

function updateSubscription(state, id, p, request) {
  const sub = state.subscriptions.get(id);
  if (!sub) return noSuch('subscription', id);
  const keys = Object.keys(p).filter((k) => k !== 'expand');
  if (sub.status === 'canceled' && keys.some((k) => k !== 'metadata' && k !== 'cancellation_details')) {
    return stripeError(400, 'A canceled subscription can only update its cancellation_details and metadata.');
  }
  const prev = {};
  if (p.cancel_at_period_end !== undefined) setCancelAtPeriodEnd(sub, asBool(p.cancel_at_period_end, false), prev);
  if (p.metadata) { prev.metadata = { ...sub.metadata }; mergeMetadata(sub.metadata, p.metadata); }
  const events = Object.keys(prev).length ? [emit(state, 'customer.subscription.updated', sub, { previous: prev, request })] : [];
  return ok(expandObj(state, sub, asArray(p.expand)), events);
}

function route(state, base, method, path, p, request) {
  let m;
  if (path === '/v1/customers' && method === 'POST') return ok(expandObj(state, createCustomer(state, p), asArray(p.expand)));
  if ((m = path.match(/^\/v1\/customers\/([^/]+)$/))) {
    const c = state.customers.get(m[1]);
    if (!c) return noSuch('customer', m[1]);
    if (method === 'POST') {
      for (const k of ['email', 'name', 'description', 'phone']) if (p[k] !== undefined) c[k] = p[k] === '' ? null : p[k];
      mergeMetadata(c.metadata, p.metadata);
    }
    if (method === 'GET' || method === 'POST') return ok(expandObj(state, c, asArray(p.expand)));
  }
  if (path === '/v1/checkout/sessions' && method === 'POST') return createSession(state, base, p);
  if ((m = path.match(/^\/v1\/checkout\/sessions\/([^/]+)$/)) && method === 'GET') {
    const rec = state.sessions.get(m[1]);
    return rec ? ok(expandObj(state, rec.obj, asArray(p.expand))) : noSuch('checkout.session', m[1]);
  }
  if ((m = path.match(/^\/v1\/checkout\/sessions\/([^/]+)\/expire$/)) && method === 'POST') return expireSession(state, m[1], request);
  if (path === '/v1/billing_portal/sessions' && method === 'POST') {
    if (!p.customer) return stripeError(400, 'Missing required param: customer.', { code: 'parameter_missing', param: 'customer' });
    if (!state.customers.has(p.customer)) return stripeError(400, `No such customer: '${p.customer}'`, { code: 'resource_missing', param: 'customer' });
    const id = newId('bps', 24);
    const obj = {
      id, object: 'billing_portal.session', configuration: p.configuration || 'bpc_fake_default', created: now(),
      customer: p.customer, flow: null, livemode: false, locale: p.locale ?? null, on_behalf_of: null,
      return_url: p.return_url ?? null, url: `${base}/portal/${id}`,
    };
    state.portalSessions.set(id, obj);
    return ok(clone(obj));
  }
  if ((m = path.match(/^\/v1\/subscriptions\/([^/]+)$/))) {
    const sub = state.subscriptions.get(m[1]);
    if (method === 'GET') return sub ? ok(expandObj(state, sub, asArray(p.expand))) : noSuch('subscription', m[1]);
    if (method === 'POST') return updateSubscription(state, m[1], p, request);
    if (method === 'DELETE') {
      if (!sub) return noSuch('subscription', m[1]);
      if (sub.status === 'canceled') return stripeError(400, `This subscription is already canceled: '${sub.id}'`);
      cancelNow(sub);
      return ok(clone(sub), [emit(state, 'customer.subscription.deleted', sub, { request })]);
    }
  }
  return stripeError(404, `Unrecognized request URL (${method}: ${path}). Please see https://stripe.com/docs or we can help at https://support.stripe.com/.`);
}

async function api(ctx, req, res, url, raw) {
  const { state } = ctx;
  const path = url.pathname.replace(/\/+$/, '').split('/').map(decode).join('/');
  const params = { ...parseForm(url.search.slice(1)), ...parseForm(raw) }; // GETs carry expand[] in the query
  const idem = req.headers['idempotency-key'] || null;
  const requestId = newId('req', 14);
  const entry = { method: req.method, path, idempotency_key: idem, body: params, at: new Date().toISOString(), status: null };
  state.requests.push(entry);
  const reply = ({ status, body, headers }) => {
    entry.status = status;
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'request-id': requestId, 'stripe-version': API_VERSION, ...headers });
    res.end(text);
    log(req.method, path, status);
    return text;
  };
  const key = apiKey(req);
  if (!key) {
    return reply(stripeError(401, "You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY'). See https://stripe.com/docs/api#authentication for details, or we can help at https://support.stripe.com/."));
  }
  if (!/^(sk|rk)_/.test(key) || (state.config.api_key && key !== state.config.api_key)) {
    return reply(stripeError(401, `Invalid API Key provided: ${key.slice(0, 8)}${'*'.repeat(Math.max(0, key.length - 12))}${key.slice(-4)}`, { code: 'api_key_invalid' }));
  }
  // Idempotency (POST only, as at Stripe): keys are per account; a replay returns the first status
  // and body byte for byte. Reusing a key on another endpoint or with other params is an
  // idempotency_error. Like Stripe, results are saved only once the endpoint ran: 2xx and 5xx are
  // saved, 4xx parameter/validation failures are not (a retry with the same key runs again).
  const fp = canonical(params);
  if (idem && req.method === 'POST') {
    const prev = state.idempotency.get(idem);
    if (prev && (prev.method !== req.method || prev.path !== path)) {
      return reply(stripeError(400, `Keys for idempotent requests can only be used for the same endpoint they were first used for ('${prev.method} ${prev.path}' vs '${req.method} ${path}'). Try using a key other than '${idem}' if you meant to execute a different request.`, { type: 'idempotency_error' }));
    }
    if (prev && prev.fp !== fp) {
      return reply(stripeError(400, `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${idem}' if you meant to execute a different request.`, { type: 'idempotency_error' }));
    }
    if (prev) return reply({ status: prev.status, body: prev.body, headers: { 'idempotent-replayed': 'true', 'original-request': prev.requestId } });
  }
  let result;
  const fi = state.failNext.findIndex((f) => (!f.method || f.method.toUpperCase() === req.method) && path.startsWith(f.prefix));
  if (fi >= 0) {
    const f = state.failNext[fi];
    if (--f.times <= 0) state.failNext.splice(fi, 1);
    result = stripeError(f.status, f.message, { type: f.type, code: f.code, param: f.param });
    if (f.should_retry !== undefined) result.headers = { 'stripe-should-retry': String(f.should_retry) };
  } else {
    result = route(state, ctx.base, req.method, path, params, { id: requestId, idempotency_key: idem });
  }
  const text = reply(result);
  if (idem && req.method === 'POST' && (result.status < 400 || result.status >= 500)) {
    state.idempotency.set(idem, { method: req.method, path, fp, status: result.status, body: text, requestId });
  }
  // Stripe sends webhooks after answering the request that caused them.
  if (result.events?.length) enqueue(state, result.events);
}

// ---------------------------------------------------------------------------------------------
// Test control under /_fake/ (not Stripe). Bodies may be JSON or a plain HTML form post; a form
// post (from the fake's own pages) gets a 303 redirect instead of JSON.
async function control(ctx, req, res, url, raw, isForm) {
  const { state } = ctx;
  let body = {};
  try { body = isForm ? parseForm(raw) : raw.trim() ? JSON.parse(raw) : {}; } catch { return json(res, 400, { error: { type: 'invalid_request_error', message: 'body is not valid JSON' } }); }
  const path = url.pathname.replace(/\/+$/, '');
  const deliverFlag = asBool(body.deliver, true);
  // Runs an action producing events: delivers them (in order, awaited) or hands them to the test.
  const withEvents = async (result, redirectTo) => {
    if (result.status >= 400) return isForm ? html(res, result.status, page('Fake Stripe', `<p>${esc(result.body.error.message)}</p>`)) : json(res, result.status, result.body);
    const events = result.events || [];
    if (!deliverFlag) {
      const secret = state.config.webhook_secret || DEFAULT_SECRET;
      return json(res, 200, { ...result.body, events: events.map((e) => ({ id: e.id, type: e.type, payload: e.payload, signature: sign(e.payload, secret) })) });
    }
    const deliveries = await enqueue(state, events);
    if (isForm && redirectTo) return redirect(res, redirectTo);
    if (isForm) return html(res, 200, page('Fake Stripe', '<p>Done.</p>'));
    return json(res, 200, { ...result.body, events: events.map((e) => e.event), deliveries: deliveries.map(({ event_id, type, status, error }) => ({ event_id, type, status, error })) });
  };
  let m;
  if (req.method === 'GET' && path === '/_fake/requests') return json(res, 200, state.requests);
  if (req.method === 'GET' && path === '/_fake/events') return json(res, 200, state.events.map(({ id, type, event, deliveries }) => ({ id, type, event, deliveries })));
  if (req.method === 'GET' && path === '/_fake/state') {
    return json(res, 200, {
      config: { ...state.config }, customers: [...state.customers.values()], sessions: [...state.sessions.values()].map((r) => r.obj),
      subscriptions: [...state.subscriptions.values()], invoices: [...state.invoices.values()], portal_sessions: [...state.portalSessions.values()],
      deliveries: state.deliveries,
    });
  }
  if (req.method !== 'POST') return json(res, 404, { error: { type: 'invalid_request_error', message: `no control endpoint ${req.method} ${path}` } });
  if (path === '/_fake/config') { // {webhook_url, webhook_secret, api_key, prices}
    for (const k of ['webhook_url', 'webhook_secret', 'api_key', 'prices']) if (body[k] !== undefined) state.config[k] = body[k];
    return json(res, 200, state.config);
  }
  if (path === '/_fake/reset') { resetState(state); return json(res, 200, { ok: true }); } // keeps config
  if (path === '/_fake/fail-next') { // {method, path_prefix, status, type, message, code, param, times, should_retry}
    const prefix = body.path_prefix || '/v1/';
    const type = body.type || 'api_error';
    state.failNext.push({
      method: body.method || null, prefix: prefix.startsWith('/v1') ? prefix : `/v1${prefix.startsWith('/') ? '' : '/'}${prefix}`,
      status: Number(body.status) || (type === 'api_error' ? 500 : 400), type, message: body.message || 'Injected failure from the fake Stripe.',
      code: body.code, param: body.param, times: Number(body.times) || 1, should_retry: body.should_retry,
    });
    return json(res, 200, { queued: state.failNext.length });
  }
  if (path === '/_fake/sign') { // {payload, timestamp?, secret?} -> a Stripe-Signature header value
    const t = asInt(body.timestamp) ?? now();
    return json(res, 200, { timestamp: t, signature: sign(String(body.payload ?? ''), body.secret || state.config.webhook_secret || DEFAULT_SECRET, t) });
  }
  if ((m = path.match(/^\/_fake\/checkout\/sessions\/([^/]+)\/complete$/))) {
    const result = completeSession(state, m[1], asBool(body.force, false)); // {deliver, force}
    const success = state.sessions.get(m[1])?.obj.success_url;
    // Stripe fills the {CHECKOUT_SESSION_ID} template in success_url when it redirects.
    return withEvents(result, success && success.replaceAll('{CHECKOUT_SESSION_ID}', m[1]));
  }
  if ((m = path.match(/^\/_fake\/checkout\/sessions\/([^/]+)\/expire$/))) {
    const result = expireSession(state, m[1]);
    return withEvents(result.status < 400 ? { ...result, body: { session: result.body } } : result, body.redirect);
  }
  if ((m = path.match(/^\/_fake\/subscriptions\/([^/]+)\/update$/))) { // {status, cancel_at_period_end, current_period_end, current_period_start, metadata}
    const sub = state.subscriptions.get(m[1]);
    if (!sub) return withEvents(noSuch('subscription', m[1]));
    const prev = {};
    const events = [];
    if (body.cancel_at_period_end !== undefined) setCancelAtPeriodEnd(sub, asBool(body.cancel_at_period_end, false), prev);
    for (const k of ['current_period_start', 'current_period_end']) {
      if (body[k] === undefined) continue;
      prev.items = prev.items || clone(sub.items);
      prev[k] = sub[k];
      sub[k] = asInt(body[k]);
      for (const si of sub.items.data) si[k] = sub[k];
      if (k === 'current_period_end' && sub.cancel_at_period_end) sub.cancel_at = sub[k];
    }
    if (body.metadata) { prev.metadata = { ...sub.metadata }; mergeMetadata(sub.metadata, body.metadata); }
    if (body.status && body.status !== sub.status) {
      prev.status = sub.status;
      if (body.status === 'canceled') cancelNow(sub); else sub.status = body.status;
      // Stripe's order on a failed renewal: invoice.payment_failed, then the subscription update.
      if (body.status === 'past_due') events.push(emit(state, 'invoice.payment_failed', createInvoice(state, sub, 'subscription_cycle', false)));
    }
    if (sub.status === 'canceled' && prev.status) events.push(emit(state, 'customer.subscription.deleted', sub));
    else if (Object.keys(prev).length) events.push(emit(state, 'customer.subscription.updated', sub, { previous: prev }));
    return withEvents({ status: 200, body: { subscription: clone(sub) }, events }, body.redirect);
  }
  if ((m = path.match(/^\/_fake\/events\/([^/]+)\/deliver$/))) { // re-deliver an event (same id, fresh signature)
    const rec = state.events.find((e) => e.id === m[1]);
    if (!rec) return json(res, 404, { error: { type: 'invalid_request_error', message: `no event ${m[1]}` } });
    const [d] = await enqueue(state, [rec]);
    return json(res, 200, d);
  }
  return json(res, 404, { error: { type: 'invalid_request_error', message: `no control endpoint POST ${path}` } });
}

// ---------------------------------------------------------------------------------------------
// The hosted pages a browser test clicks through.
const page = (title, body) => `<!doctype html><html><head><meta charset="utf-8"><title>${esc(title)}</title></head>
<body style="font-family:sans-serif;max-width:36rem;margin:2rem auto">${body}</body></html>`;

function checkoutPage(state, id) {
  const rec = state.sessions.get(id);
  if (!rec) return null;
  const s = rec.obj;
  const rows = rec.lines.map((l) => `<li data-testid="fake-stripe-line">${esc(l.price.id)} × ${l.quantity}: <span data-testid="fake-stripe-price">${money(l.price.amount)} / ${l.price.interval}</span></li>`).join('');
  const actions = s.status === 'open'
    ? `<form method="post" action="/_fake/checkout/sessions/${esc(id)}/complete"><button type="submit" data-testid="fake-stripe-pay">Pay</button></form>
<p><a href="${esc(s.cancel_url || '/')}" data-testid="fake-stripe-cancel">Cancel</a></p>`
    : `<p data-testid="fake-stripe-status">This session is ${esc(s.status)}.</p>`;
  return page('Fake Stripe Checkout', `<h1>Fake Stripe Checkout</h1>
<p>Session <code data-testid="fake-stripe-session">${esc(id)}</code> (${esc(s.mode)}, ${esc(s.status)})</p>
<p>${esc(s.customer_email || state.customers.get(s.customer)?.email || '')}</p><ul>${rows}</ul>
<p>Total: <b data-testid="fake-stripe-total">${money(s.amount_total || 0)}</b></p>${actions}`);
}

function portalPage(state, id) {
  const ps = state.portalSessions.get(id);
  if (!ps) return null;
  const subs = [...state.subscriptions.values()].filter((s) => s.customer === ps.customer);
  const rows = subs.map((s) => `<li data-testid="fake-portal-sub">${esc(s.id)}: ${esc(s.items.data.map((i) => i.price.id).join(', '))},
 ${esc(s.status)}${s.cancel_at_period_end ? ' (cancels at period end)' : ''}
 <form method="post" action="/_fake/subscriptions/${esc(s.id)}/update" style="display:inline">
 <input type="hidden" name="cancel_at_period_end" value="${!s.cancel_at_period_end}"><input type="hidden" name="redirect" value="/portal/${esc(id)}">
 <button type="submit" data-testid="fake-portal-toggle-cancel">${s.cancel_at_period_end ? 'Renew' : 'Cancel plan'}</button></form></li>`).join('');
  return page('Fake Stripe Customer Portal', `<h1>Fake Stripe Customer Portal</h1>
<p>Customer <code data-testid="fake-portal-customer">${esc(ps.customer)}</code></p><ul>${rows || '<li>No subscriptions.</li>'}</ul>
<p><a href="${esc(ps.return_url || '/')}" data-testid="fake-portal-return">Return</a></p>`);
}

// ---------------------------------------------------------------------------------------------
// HTTP plumbing.
function json(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
function html(res, status, text) {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8' });
  res.end(text);
}
function redirect(res, location) {
  res.writeHead(303, { location });
  res.end();
}
function readBody(req) {
  return new Promise((resolve, reject) => {
    let size = 0;
    const chunks = [];
    req.on('data', (c) => { size += c.length; if (size > 1 << 20) req.destroy(new Error('body too large')); else chunks.push(c); });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

async function handle(ctx, req, res) {
  const url = new URL(req.url, 'http://localhost');
  const raw = await readBody(req);
  const isForm = /application\/x-www-form-urlencoded/i.test(req.headers['content-type'] || '');
  if (url.pathname.startsWith('/v1/')) return api(ctx, req, res, url, raw);
  if (url.pathname.startsWith('/_fake/')) return control(ctx, req, res, url, raw, isForm);
  const m = url.pathname.match(/^\/(checkout|portal)\/([^/]+)\/?$/);
  const text = m && req.method === 'GET' && (m[1] === 'checkout' ? checkoutPage : portalPage)(ctx.state, decode(m[2]));
  if (text) return html(res, 200, text);
  return json(res, 404, stripeError(404, `Unrecognized request URL (${req.method}: ${url.pathname}).`).body);
}

export async function startFakeStripe({ port = 0, webhookUrl, webhookSecret, host = '127.0.0.1' } = {}) {
  const state = newState({
    webhook_url: webhookUrl ?? process.env.FAKE_STRIPE_WEBHOOK_URL ?? null,
    webhook_secret: webhookSecret ?? process.env.FAKE_STRIPE_WEBHOOK_SECRET ?? DEFAULT_SECRET,
    api_key: null, prices: {},
  });
  const ctx = { state, base: '' };
  const server = http.createServer((req, res) => {
    handle(ctx, req, res).catch((e) => {
      console.error('[fake-stripe] internal error:', e);
      if (!res.headersSent) json(res, 500, { error: { type: 'api_error', message: String(e?.message || e) } });
      else res.end();
    });
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(Number(port) || 0, host, resolve);
  });
  const actual = server.address().port;
  ctx.base = `http://${host}:${actual}`;
  const close = () => new Promise((resolve) => { server.close(() => resolve()); server.closeAllConnections(); });
  return { port: actual, url: ctx.base, close, state };
}

async function main() {
  const args = process.argv.slice(2);
  let port = 0;
  args.forEach((a, i) => {
    if (a === '--port') port = Number(args[i + 1]);
    else if (a.startsWith('--port=')) port = Number(a.slice(7));
  });
  const fake = await startFakeStripe({ port });
  process.stdout.write(`${JSON.stringify({ port: fake.port })}\n`);
  const stop = () => process.exit(0);
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  if (args.includes('--exit-with-stdin')) process.stdin.on('end', stop).on('close', stop).resume();
}

const isMain = (() => {
  try { return !!process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href; } catch { return false; }
})();
if (isMain) {
  main().catch((e) => { console.error('[fake-stripe]', e); process.exit(1); });
}
