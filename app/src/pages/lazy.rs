//! The lazy routes: every page but the home page. In the browser build each
//! route's view is a split point: its code goes into a module of its own
//! (see `.ci/build-site.sh`), fetched when the route is first shown, so the
//! home page loads none of it. On the server they render as usual.

use leptos::prelude::*;
use leptos_router::{lazy_route, LazyRoute};

use super::account::AccountPage;
use super::admin::AdminPage;
use super::audit::AuditPage;
use super::issues::{ArchivePage, IssuePage};
use super::loops::{LoopPage, LoopsPage};
use super::pricing::{PricingPage, ThanksPage};
use super::signin::{SigninPage, VerifyPage};
use super::subscribe::{SubscribeConfirmPage, SubscribePage, UnsubscribePage};
use super::team::TeamPage;

/// Declares a lazy route that shows `$page`.
macro_rules! lazy_page {
    ($route:ident, $page:ident) => {
        #[derive(Debug)]
        pub struct $route;

        #[lazy_route]
        impl LazyRoute for $route {
            fn data() -> Self {
                $route
            }

            fn view(this: Self) -> AnyView {
                let $route = this;
                view! { <$page/> }.into_any()
            }
        }
    };
}

lazy_page!(AuditRoute, AuditPage);
lazy_page!(SigninRoute, SigninPage);
lazy_page!(VerifyRoute, VerifyPage);
lazy_page!(AccountRoute, AccountPage);
lazy_page!(LoopsRoute, LoopsPage);
lazy_page!(LoopRoute, LoopPage);
lazy_page!(AdminRoute, AdminPage);
lazy_page!(TeamRoute, TeamPage);
lazy_page!(ArchiveRoute, ArchivePage);
lazy_page!(IssueRoute, IssuePage);
lazy_page!(PricingRoute, PricingPage);
lazy_page!(ThanksRoute, ThanksPage);
lazy_page!(SubscribeRoute, SubscribePage);
lazy_page!(SubscribeConfirmRoute, SubscribeConfirmPage);
lazy_page!(UnsubscribeRoute, UnsubscribePage);
