//! The page of an error answered outside the application's routes: a form
//! refused by its handler, a request the HTTP layer could not read (an
//! address too long, bytes that are not an address). It looks like the
//! site (its stylesheet, header and footer) but is a document of its own,
//! without the hydration scripts: the address it answers for may be one the
//! application's router would draw as another page, and hydrating that over
//! this one would replace the error with it.

#[cfg(feature = "ssr")]
use leptos::prelude::*;

/// The whole HTML document for an error: the status, a sentence saying what
/// happened, a link home. `stylesheet` is the current build's
/// (`/pkg/<build id>/fixedpoint.css`).
#[cfg(feature = "ssr")]
pub fn error_document(status: u16, reason: &str, sentence: &str, stylesheet: &str) -> String {
    use leptos::tachys::view::RenderHtml;

    // `URI Too Long` reads `414: URI too long`: words lowercased, acronyms kept.
    let words: Vec<String> = reason
        .split(' ')
        .map(|word| {
            if word.len() > 1 && word.chars().all(|c| c.is_ascii_uppercase()) {
                word.to_string()
            } else {
                word.to_lowercase()
            }
        })
        .collect();
    let heading = format!("{status}: {}", words.join(" "));
    let title = format!("{status} {reason} · Fixed Point");
    let sentence = sentence.to_string();
    let stylesheet = stylesheet.to_string();
    let owner = Owner::new();
    let html = owner.with(|| {
        view! {
            <html lang="en">
                <head>
                    <meta charset="utf-8"/>
                    <meta name="viewport" content="width=device-width, initial-scale=1"/>
                    <title>{title}</title>
                    <link rel="stylesheet" href=stylesheet/>
                    <link rel="icon" href="/favicon.ico"/>
                </head>
                <body>
                    <a class="skip-link" href="#main">"Skip to content"</a>
                    // The site header's places, as plain links (no router here).
                    <header class="site-header">
                        <a href="/" class="brand">
                            <span class="brand-mark" aria-hidden="true">"f(x)=x"</span>
                            <span class="brand-name">"Fixed Point"</span>
                        </a>
                        <nav aria-label="Main">
                            <ul>
                                <li><a href="/audit">"Audit"</a></li>
                                <li><a href="/loops">"Loops"</a></li>
                                <li><a href="/issues">"Archive"</a></li>
                                <li><a href="/pricing">"Pricing"</a></li>
                            </ul>
                        </nav>
                    </header>
                    <main id="main">
                        <section class="error-page" data-testid="error-page" data-status=status.to_string()>
                            <h1>{heading}</h1>
                            <p>{sentence}</p>
                            <p><a href="/">"Back to the home page"</a></p>
                        </section>
                    </main>
                    <footer class="site-footer">
                        <p>"Fixed Point: a newsletter and tools about the loops around models."</p>
                    </footer>
                </body>
            </html>
        }
        .to_html()
    });
    format!("<!DOCTYPE html>{html}")
}

#[cfg(all(test, feature = "ssr"))]
mod tests {
    use super::*;

    #[test]
    fn the_error_page_says_what_happened_and_escapes_it() {
        let page =
            error_document(414, "URI Too Long", "the address is <too> long.", "/pkg/0a1b2c3d/fixedpoint.css");
        assert!(page.starts_with("<!DOCTYPE html><html lang=\"en\">"), "{page}");
        assert!(page.contains("<title>414 URI Too Long · Fixed Point</title>"), "{page}");
        assert!(page.contains("<h1>414: URI too long</h1>"), "{page}");
        assert!(page.contains("the address is &lt;too&gt; long."), "{page}");
        assert!(page.contains("href=\"/pkg/0a1b2c3d/fixedpoint.css\""), "{page}");
        assert!(page.contains("<a href=\"/\">Back to the home page</a>"), "{page}");
        assert!(!page.contains("<script"), "no hydration: {page}");
    }
}
