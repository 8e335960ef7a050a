//! The styles of the newsletter's HTML mail, inlined into each element's
//! `style` attribute (mail apps drop stylesheets) by the css-inline crate.
//!
//! The stylesheet is the site's own, read from `style/main.css` when the
//! server is compiled, so the mail cannot drift from the site: the rules that
//! style an issue's content (`.issue-body`, `pre.code`, the `.hl-*` colours of
//! highlighted code, `.upgrade-card`), then `style/mail.css` (the layout
//! around the issue). Two things mail apps handle badly are resolved first:
//! `var(--name)` takes its value from main.css's `:root`, and `rem` becomes
//! `px` (16 to the rem, the browsers' default).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::OnceLock;

const SITE_CSS: &str = include_str!("../../../style/main.css");
const MAIL_CSS: &str = include_str!("../../../style/mail.css");

/// The site's rules taken into the mail: those whose every selector starts
/// with one of these.
const ISSUE_SELECTORS: [&str; 4] = [".issue-body", "pre.code", ".hl-", ".upgrade-card"];

/// `html` with the mail's stylesheet inlined. Should the inliner ever refuse
/// the document, the message still goes, unstyled (and the log says why).
pub fn inline(html: &str) -> String {
    let inliner = css_inline::CSSInliner::options()
        .inline_style_tags(false)
        .keep_style_tags(false)
        .keep_link_tags(false)
        .load_remote_stylesheets(false)
        .extra_css(Some(Cow::Borrowed(stylesheet())))
        .build();
    inliner.inline(html).unwrap_or_else(|error| {
        tracing::error!(%error, "could not inline the newsletter's styles");
        html.to_string()
    })
}

/// The mail's stylesheet, built once.
pub fn stylesheet() -> &'static str {
    static CSS: OnceLock<String> = OnceLock::new();
    CSS.get_or_init(|| mail_stylesheet(SITE_CSS, MAIL_CSS))
}

fn mail_stylesheet(site: &str, mail: &str) -> String {
    let site = without_comments(site);
    let variables = root_variables(&site);
    let mut css = String::new();
    for (selectors, declarations) in top_level_rules(&site) {
        let issue_rule = selectors
            .split(',')
            .all(|selector| ISSUE_SELECTORS.iter().any(|prefix| selector.trim().starts_with(prefix)));
        if issue_rule {
            css.push_str(&format!("{} {{ {} }}\n", selectors.trim(), declarations.trim()));
        }
    }
    css.push_str(&without_comments(mail));
    rem_to_px(&resolve_variables(&css, &variables))
}

fn without_comments(css: &str) -> String {
    let mut out = String::with_capacity(css.len());
    let mut rest = css;
    while let Some(start) = rest.find("/*") {
        out.push_str(&rest[..start]);
        rest = rest[start + 2..].find("*/").map_or("", |end| &rest[start + 2 + end + 2..]);
    }
    out.push_str(rest);
    out
}

/// The rules outside any at-rule (`@media` blocks are skipped whole: they
/// cannot be inlined), as (selectors, declarations).
fn top_level_rules(css: &str) -> Vec<(&str, &str)> {
    let mut rules = Vec::new();
    let mut rest = css;
    while let Some(open) = rest.find('{') {
        let selectors = &rest[..open];
        let mut depth = 0;
        let mut close = None;
        for (at, c) in rest[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(open + at);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(close) = close else { break };
        if !selectors.trim_start().starts_with('@') {
            rules.push((selectors, &rest[open + 1..close]));
        }
        rest = &rest[close + 1..];
    }
    rules
}

/// The custom properties of the `:root` rule.
fn root_variables(css: &str) -> HashMap<String, String> {
    top_level_rules(css)
        .into_iter()
        .filter(|(selectors, _)| selectors.trim() == ":root")
        .flat_map(|(_, declarations)| declarations.split(';'))
        .filter_map(|declaration| declaration.split_once(':'))
        .filter(|(name, _)| name.trim().starts_with("--"))
        .map(|(name, value)| (name.trim().to_string(), value.trim().to_string()))
        .collect()
}

/// `var(--name)` replaced by the variable's value (an unknown one is left
/// as it is, and a test holds that none is).
fn resolve_variables(css: &str, variables: &HashMap<String, String>) -> String {
    let mut out = String::with_capacity(css.len());
    let mut rest = css;
    while let Some(at) = rest.find("var(") {
        out.push_str(&rest[..at]);
        let Some(end) = rest[at..].find(')') else { break };
        let name = rest[at + 4..at + end].split(',').next().unwrap_or_default().trim();
        match variables.get(name) {
            Some(value) => out.push_str(value),
            None => out.push_str(&rest[at..=at + end]),
        }
        rest = &rest[at + end + 1..];
    }
    out.push_str(rest);
    out
}

/// Lengths in `rem` as `px`, at 16 px to the rem.
fn rem_to_px(css: &str) -> String {
    let mut out = String::with_capacity(css.len());
    let mut rest = css;
    while let Some(at) = rest.find("rem") {
        let number_start =
            rest[..at].rfind(|c: char| !(c.is_ascii_digit() || c == '.')).map_or(0, |before| before + 1);
        let number = &rest[number_start..at];
        let unit_ends = !rest[at + 3..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-');
        match number.parse::<f64>() {
            Ok(rems) if !number.is_empty() && unit_ends => {
                out.push_str(&rest[..number_start]);
                let px = (rems * 16.0 * 100.0).round() / 100.0;
                out.push_str(&format!("{px}px"));
            }
            _ => out.push_str(&rest[..at + 3]),
        }
        rest = &rest[at + 3..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mail_takes_the_sites_issue_rules_with_values_a_mail_app_reads() {
        let css = stylesheet();
        assert!(!css.contains("var("), "every variable is resolved: {css}");
        assert!(!css.contains("rem;") && !css.contains("rem "), "no rem is left: {css}");
        assert!(!css.contains('@'), "no at-rule: {css}");
        assert!(css.contains(".hl-keyword { color: #f0a35e; }"), "{css}");
        assert!(!css.contains(".site-header"), "only the rules of an issue's content: {css}");
    }

    #[test]
    fn variables_and_rems_are_resolved_and_nothing_else_is_touched() {
        let site = ":root { --ink: #111; --radius: 8px; } /* a note */\n\
                    @media (max-width: 30rem) { pre.code { color: red; } }\n\
                    pre.code { color: var(--ink); border-radius: var(--radius); padding: 0.9rem 1rem; }\n\
                    .hl-x, .hl-y { color: var(--missing, #fff); }\n\
                    .other, .hl-z { color: blue; }\n\
                    .issue-body h2 { font-size: 1.3rem; margin-top: 2rem; width: calc(100% - .5rem); }";
        let css = mail_stylesheet(site, "a { color: var(--ink); } .lorem { width: 2rem; }");
        assert!(css.contains("pre.code { color: #111; border-radius: 8px; padding: 14.4px 16px; }"), "{css}");
        assert!(css.contains(".hl-x, .hl-y { color: var(--missing, #fff); }"), "{css}");
        assert!(!css.contains("blue") && !css.contains("red"), "{css}");
        assert!(css.contains("font-size: 20.8px; margin-top: 32px; width: calc(100% - 8px);"), "{css}");
        assert!(css.contains("a { color: #111; } .lorem { width: 32px; }"), "{css}");
    }
}
