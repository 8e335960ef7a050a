//! Billing: Stripe Checkout for the three plans, Stripe's signed webhooks,
//! the Customer Portal, and the founder seats (at most
//! `FIXEDPOINT_FOUNDER_SEATS` sold at once, whatever the concurrency).
//!
//! Entitlements follow from subscription state only: a reader's tier is
//! read from the `subscriptions` rows the webhooks keep equal to Stripe's
//! latest object (see [`crate::newsletter`]); nothing here grants a tier on
//! its own.

pub mod checkout;
pub mod live;
mod store;
pub mod sweeper;
pub mod web;
pub mod webhook;

use thiserror::Error;

use crate::accounts::AccountsError;
use crate::config::StripeConfig;
use crate::newsletter::Tier;
use crate::store::StoreError;

pub use crate::live::FounderCount;
pub use store::{PaidOutcome, SeatHold, StripeSubscription};

/// How long a Checkout Session (and so a founder seat hold) lives.
pub const CHECKOUT_TTL_SECONDS: i64 = 30 * 60;

#[derive(Debug, Error)]
pub enum BillingError {
    #[error("payments are not configured")]
    NotConfigured,
    #[error("every founder seat is taken")]
    SoldOut,
    #[error("you already have a subscription: manage it from your account page")]
    AlreadySubscribed,
    #[error("a founder checkout of yours is being started; try again in a moment")]
    CheckoutInProgress,
    #[error("plan: must be one of pro_monthly, pro_yearly, founder_yearly")]
    BadPlan,
    #[error("Stripe: {0}")]
    Stripe(String),
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Accounts(#[from] AccountsError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<crate::stripe_api::StripeCallError> for BillingError {
    fn from(error: crate::stripe_api::StripeCallError) -> Self {
        BillingError::Stripe(error.0)
    }
}

impl From<sqlx::Error> for BillingError {
    fn from(error: sqlx::Error) -> Self {
        BillingError::Store(StoreError::from(error))
    }
}

impl From<crate::newsletter::NewsletterError> for BillingError {
    fn from(error: crate::newsletter::NewsletterError) -> Self {
        BillingError::Invalid(error.to_string())
    }
}

/// The plans a reader can buy (`plan` of `POST /api/v1/checkout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    ProMonthly,
    ProYearly,
    FounderYearly,
}

impl Plan {
    pub fn from_name(name: &str) -> Option<Plan> {
        match name {
            "pro_monthly" => Some(Plan::ProMonthly),
            "pro_yearly" => Some(Plan::ProYearly),
            "founder_yearly" => Some(Plan::FounderYearly),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Plan::ProMonthly => "pro_monthly",
            Plan::ProYearly => "pro_yearly",
            Plan::FounderYearly => "founder_yearly",
        }
    }

    pub fn tier(self) -> Tier {
        match self {
            Plan::ProMonthly | Plan::ProYearly => Tier::Pro,
            Plan::FounderYearly => Tier::Founder,
        }
    }

    pub fn price(self, config: &StripeConfig) -> &str {
        match self {
            Plan::ProMonthly => &config.price_pro_monthly,
            Plan::ProYearly => &config.price_pro_yearly,
            Plan::FounderYearly => &config.price_founder_yearly,
        }
    }
}

/// The tier a Stripe Price buys, if it is one of ours.
pub fn tier_of_price(config: &StripeConfig, price: &str) -> Option<Tier> {
    if price == config.price_founder_yearly {
        Some(Tier::Founder)
    } else if price == config.price_pro_monthly || price == config.price_pro_yearly {
        Some(Tier::Pro)
    } else {
        None
    }
}

/// Statuses in which a Stripe subscription gives access: active, trialing,
/// and past due (Stripe is retrying a failed payment: the grace period).
pub fn status_entitles(status: &str) -> bool {
    matches!(status, "active" | "trialing" | "past_due")
}
