//! The calls we make to Stripe, through the Stripe library (async-stripe),
//! reduced to what billing needs. `STRIPE_API_BASE` points the library at
//! another host (the tests' local fake of Stripe's HTTP API).
//!
//! Like `crate::mail`'s SMTP client, it is a client of an outside service
//! that the request state holds, so it sits below `crate::web`; billing
//! decides what to ask of it.

use std::collections::HashMap;

use stripe::{Client, ClientBuilder, IdempotencyKey, RequestStrategy, StripeRequest};
use stripe_billing::billing_portal_session::CreateBillingPortalSession;
use stripe_billing::subscription::{CancelSubscription, RetrieveSubscription, UpdateSubscription};
use stripe_checkout::checkout_session::{
    CreateCheckoutSession, CreateCheckoutSessionLineItems, CreateCheckoutSessionSubscriptionData,
    ExpireCheckoutSession, RetrieveCheckoutSession,
};
use stripe_checkout::CheckoutSessionMode;
use stripe_core::customer::CreateCustomer;

use crate::config::StripeConfig;

/// A call to Stripe that failed, or that answered what we cannot use: why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct StripeCallError(pub String);

/// What a new Checkout Session needs.
#[derive(Debug, Clone)]
pub struct CheckoutRequest {
    pub customer: String,
    pub price: String,
    pub account_id: i64,
    pub plan: &'static str,
    pub hold_id: Option<i64>,
    pub success_url: String,
    pub cancel_url: String,
    /// Unix seconds.
    pub expires_at: i64,
    pub idempotency_key: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatedSession {
    pub id: String,
    pub url: String,
}

/// A Checkout Session's state: `open`, `complete` or `expired`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionState {
    pub status: String,
    pub subscription: Option<String>,
}

/// The parts of a subscription's current object we store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscriptionObject {
    pub id: String,
    pub customer_id: String,
    pub status: String,
    pub price_id: Option<String>,
    /// Unix seconds.
    pub current_period_end: Option<i64>,
    pub cancel_at_period_end: bool,
    pub created: i64,
    /// `metadata.account_id`, which our checkouts set.
    pub metadata_account_id: Option<i64>,
    /// `metadata.hold_id`: the founder seat hold of the checkout that made it.
    pub metadata_hold_id: Option<i64>,
}

pub struct StripeApi {
    client: Client,
}

impl std::fmt::Debug for StripeApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StripeApi")
    }
}

fn failed(error: stripe::StripeError) -> StripeCallError {
    StripeCallError(error.to_string())
}

fn idempotent(key: &str) -> Result<RequestStrategy, StripeCallError> {
    let key =
        IdempotencyKey::new(key).map_err(|error| StripeCallError(format!("idempotency key: {error}")))?;
    Ok(RequestStrategy::Idempotent(key))
}

impl StripeApi {
    pub fn new(config: &StripeConfig) -> StripeApi {
        // The library joins "{base}v1/...": the base ends with a slash.
        let base = format!("{}/", config.api_base.trim_end_matches('/'));
        let client = ClientBuilder::new(config.secret_key.clone())
            .url(base)
            .build()
            .unwrap_or_else(|_| Client::new(config.secret_key.clone()));
        StripeApi { client }
    }

    /// Creates the account's customer; the idempotency key makes a repeat
    /// (or a concurrent first checkout) return the same customer.
    pub async fn create_customer(&self, account_id: i64, email: &str) -> Result<String, StripeCallError> {
        let metadata = HashMap::from([("account_id".to_string(), account_id.to_string())]);
        let customer = CreateCustomer::new()
            .email(email)
            .metadata(metadata)
            .customize()
            .request_strategy(idempotent(&format!("customer-{account_id}"))?)
            .send(&self.client)
            .await
            .map_err(failed)?;
        Ok(customer.id.as_str().to_string())
    }

    pub async fn create_checkout(
        &self,
        request: &CheckoutRequest,
    ) -> Result<CreatedSession, StripeCallError> {
        let mut metadata = HashMap::from([
            ("account_id".to_string(), request.account_id.to_string()),
            ("plan".to_string(), request.plan.to_string()),
        ]);
        if let Some(hold) = request.hold_id {
            metadata.insert("hold_id".to_string(), hold.to_string());
        }
        let mut item = CreateCheckoutSessionLineItems::new();
        item.price = Some(request.price.clone());
        item.quantity = Some(1);
        let mut subscription = CreateCheckoutSessionSubscriptionData::new();
        subscription.metadata = Some(metadata.clone());
        let session = CreateCheckoutSession::new()
            .mode(CheckoutSessionMode::Subscription)
            .customer(request.customer.as_str())
            .client_reference_id(request.account_id.to_string())
            .line_items(vec![item])
            .subscription_data(subscription)
            .metadata(metadata)
            .success_url(request.success_url.as_str())
            .cancel_url(request.cancel_url.as_str())
            .expires_at(request.expires_at)
            .customize()
            .request_strategy(idempotent(&request.idempotency_key)?)
            .send(&self.client)
            .await
            .map_err(failed)?;
        let url = session.url.ok_or_else(|| StripeCallError("the Checkout Session has no URL".into()))?;
        Ok(CreatedSession { id: session.id.as_str().to_string(), url })
    }

    /// The session's state, or `None` when Stripe answers that it has no
    /// such session (404), which is not the same as failing to answer.
    pub async fn checkout_session(&self, id: &str) -> Result<Option<SessionState>, StripeCallError> {
        let session = match RetrieveCheckoutSession::new(id).send(&self.client).await {
            Ok(session) => session,
            Err(stripe::StripeError::Stripe(_, 404)) => return Ok(None),
            Err(error) => return Err(failed(error)),
        };
        Ok(Some(SessionState {
            status: session.status.map(|status| status.as_str().to_string()).unwrap_or_default(),
            subscription: session.subscription.map(|subscription| subscription.id().as_str().to_string()),
        }))
    }

    pub async fn expire_checkout(&self, id: &str) -> Result<SessionState, StripeCallError> {
        let session = ExpireCheckoutSession::new(id).send(&self.client).await.map_err(failed)?;
        Ok(SessionState {
            status: session.status.map(|status| status.as_str().to_string()).unwrap_or_default(),
            subscription: session.subscription.map(|subscription| subscription.id().as_str().to_string()),
        })
    }

    /// The subscription's current object, or `None` when Stripe answers that
    /// it has no such subscription (404): an event about one that was never
    /// ours (another account's test data, a deleted test clock), which no
    /// retry will change.
    pub async fn subscription(&self, id: &str) -> Result<Option<SubscriptionObject>, StripeCallError> {
        let subscription = match RetrieveSubscription::new(id).send(&self.client).await {
            Ok(subscription) => subscription,
            Err(stripe::StripeError::Stripe(_, 404)) => return Ok(None),
            Err(error) => return Err(failed(error)),
        };
        let item = subscription.items.data.first();
        Ok(Some(SubscriptionObject {
            id: subscription.id.as_str().to_string(),
            customer_id: subscription.customer.id().as_str().to_string(),
            status: subscription.status.as_str().to_string(),
            price_id: item.map(|item| item.price.id.as_str().to_string()),
            current_period_end: item.map(|item| item.current_period_end),
            cancel_at_period_end: subscription.cancel_at_period_end,
            created: subscription.created,
            metadata_account_id: subscription.metadata.get("account_id").and_then(|id| id.parse().ok()),
            metadata_hold_id: subscription.metadata.get("hold_id").and_then(|id| id.parse().ok()),
        }))
    }

    /// Cancels at once (a founder seat that could not be honoured).
    pub async fn cancel_now(&self, id: &str) -> Result<(), StripeCallError> {
        CancelSubscription::new(id).send(&self.client).await.map_err(failed)?;
        Ok(())
    }

    pub async fn set_cancel_at_period_end(&self, id: &str, cancel: bool) -> Result<(), StripeCallError> {
        UpdateSubscription::new(id).cancel_at_period_end(cancel).send(&self.client).await.map_err(failed)?;
        Ok(())
    }

    /// A Customer Portal session's URL.
    pub async fn portal_session(
        &self,
        customer: &str,
        return_url: &str,
        configuration: Option<&str>,
    ) -> Result<String, StripeCallError> {
        let mut request = CreateBillingPortalSession::new().customer(customer).return_url(return_url);
        if let Some(configuration) = configuration {
            request = request.configuration(configuration);
        }
        let session = request.send(&self.client).await.map_err(failed)?;
        Ok(session.url)
    }
}
