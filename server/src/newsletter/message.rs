//! A newsletter message: an issue cut to the recipient's tier, as plain
//! text and as HTML with its styles inline (mail apps drop stylesheets),
//! with the headers bulk mail needs (RFC 8058's one-click unsubscribe,
//! `Message-ID`, `Date`).
//!
//! An issue's two variants (the whole issue, or the free part with a link
//! to the rest) are rendered once per send ([`IssueLetter`]); a recipient's
//! message only fills in their unsubscribe link.

use lettre::message::header::{ContentType, HeaderName, HeaderValue};
use lettre::message::{Mailbox, MultiPart, SinglePart};
use lettre::Message;

use super::Tier;

/// Stands in for the recipient's unsubscribe URL in a rendered letter.
const UNSUBSCRIBE_SLOT: &str = "{{fixedpoint-unsubscribe-url}}";

/// The issue as the deliverer reads it from the database.
#[derive(Debug, Clone)]
pub struct IssueContent {
    pub slug: String,
    pub title: String,
    pub summary: String,
    pub date: String,
    pub tier: Tier,
    pub free_html: String,
    pub paid_html: Option<String>,
}

/// One variant of an issue, rendered and waiting for a recipient.
#[derive(Debug, Clone)]
pub struct IssueLetter {
    pub subject: String,
    text: String,
    html: String,
}

impl IssueLetter {
    /// Renders `issue` for a reader of `reader` tier: the whole issue when
    /// the tier reads it, else the free part and a link to the rest (the
    /// paid part is not even read here).
    pub fn render(issue: &IssueContent, reader: Tier, public_url: &str) -> IssueLetter {
        let url = format!("{public_url}/issues/{}", issue.slug);
        let whole = reader.reads(issue.tier) || issue.paid_html.is_none();
        let mut body_html = issue.free_html.clone();
        if whole {
            if let Some(paid) = &issue.paid_html {
                body_html.push_str(paid);
            }
        }
        let rest = (!whole).then(|| {
            let tier = issue.tier.label();
            let what =
                if issue.free_html.trim().is_empty() { "This issue" } else { "The rest of this issue" };
            (format!("{what} is for {tier} readers."), format!("{public_url}/pricing"))
        });
        let html = html_document(issue, &body_html, &url, rest.as_ref());
        let text = text_document(issue, &body_html, &url, rest.as_ref());
        IssueLetter { subject: issue.title.clone(), text, html }
    }

    /// The message to `to`, with its unsubscribe link and headers.
    pub fn message(
        &self,
        from: &Mailbox,
        to: &str,
        unsubscribe_url: &str,
        message_id: &str,
    ) -> Result<Message, String> {
        let to: Mailbox = to.parse().map_err(|error| format!("recipient {to:?}: {error}"))?;
        let text = self.text.replace(UNSUBSCRIBE_SLOT, unsubscribe_url);
        let html = self.html.replace(UNSUBSCRIBE_SLOT, unsubscribe_url);
        let raw =
            |name: &'static str, value: String| HeaderValue::new(HeaderName::new_from_ascii_str(name), value);
        Message::builder()
            .from(from.clone())
            .to(to)
            .subject(self.subject.clone())
            .message_id(Some(message_id.to_string()))
            .date_now()
            .raw_header(raw("List-Unsubscribe", format!("<{unsubscribe_url}>")))
            .raw_header(raw("List-Unsubscribe-Post", "List-Unsubscribe=One-Click".to_string()))
            .multipart(
                MultiPart::alternative()
                    .singlepart(SinglePart::builder().header(ContentType::TEXT_PLAIN).body(text))
                    .singlepart(SinglePart::builder().header(ContentType::TEXT_HTML).body(html)),
            )
            .map_err(|error| error.to_string())
    }
}

fn html_document(issue: &IssueContent, body: &str, url: &str, rest: Option<&(String, String)>) -> String {
    let title = escape(&issue.title);
    let summary = escape(&issue.summary);
    let rest = rest
        .map(|(line, pricing)| {
            format!(
                "<div class=\"upgrade-card\"><p><strong>{}</strong></p>\
                 <p><a href=\"{}\">Read it on the site</a> · <a href=\"{}\">See the plans</a></p></div>",
                escape(line),
                escape(url),
                escape(pricing)
            )
        })
        .unwrap_or_default();
    let html = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{title}</title></head>\
         <body><div class=\"mail-page\">\
         <p class=\"mail-meta\">Fixed Point · {date}</p>\
         <h1 class=\"mail-title\"><a href=\"{url}\">{title}</a></h1>\
         <p class=\"mail-summary\">{summary}</p>\
         <div class=\"issue-body\">{body}</div>{rest}\
         <hr class=\"mail-rule\">\
         <p class=\"mail-footer\"><a href=\"{url}\">Read this issue on the site</a> · \
         <a href=\"{UNSUBSCRIBE_SLOT}\">Unsubscribe</a></p></div></body></html>",
        date = escape(&issue.date),
        url = escape(url),
    );
    super::mail_style::inline(&html)
}

fn text_document(issue: &IssueContent, body: &str, url: &str, rest: Option<&(String, String)>) -> String {
    let mut text = format!(
        "{}\n{}\n\n{}\n\n",
        issue.title,
        "=".repeat(issue.title.chars().count().min(72)),
        issue.summary
    );
    text.push_str(html_to_text(body).trim_end());
    text.push_str("\n\n");
    if let Some((line, pricing)) = rest {
        text.push_str(&format!("{line}\nRead it on the site: {url}\nSee the plans: {pricing}\n\n"));
    }
    text.push_str(&format!("-- \nRead this issue on the site: {url}\nUnsubscribe: {UNSUBSCRIBE_SLOT}\n"));
    text
}

/// Plain text of sanitised HTML: paragraphs and headings as lines, list
/// items with a dash, code blocks as they are, links with their address.
pub fn html_to_text(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    let mut in_pre = false;
    let mut link: Option<String> = None;
    while !rest.is_empty() {
        let Some(at) = rest.find('<') else {
            out.push_str(&text_of(rest, in_pre));
            break;
        };
        out.push_str(&text_of(&rest[..at], in_pre));
        rest = &rest[at..];
        let Some(end) = rest.find('>') else { break };
        let tag = &rest[1..end];
        rest = &rest[end + 1..];
        let closing = tag.starts_with('/');
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
            .to_ascii_lowercase();
        match (name.as_str(), closing) {
            ("p" | "div" | "blockquote" | "ul" | "ol" | "table", _) => ensure_blank_line(&mut out),
            ("h1" | "h2" | "h3" | "h4" | "h5" | "h6", false) => {
                ensure_blank_line(&mut out);
                out.push_str("## ");
            }
            ("h1" | "h2" | "h3" | "h4" | "h5" | "h6", true) => ensure_blank_line(&mut out),
            ("br", _) => out.push('\n'),
            ("li", false) => {
                if !out.ends_with('\n') && !out.is_empty() {
                    out.push('\n');
                }
                out.push_str("- ");
            }
            ("tr", true) => out.push('\n'),
            ("pre", false) => {
                ensure_blank_line(&mut out);
                in_pre = true;
            }
            ("pre", true) => {
                in_pre = false;
                ensure_blank_line(&mut out);
            }
            ("a", false) => {
                link = tag.find("href=\"").map(|at| {
                    let href = &tag[at + 6..];
                    decode_entities(&href[..href.find('"').unwrap_or(href.len())])
                });
            }
            ("a", true) => {
                if let Some(href) = link.take() {
                    if !href.starts_with('#') && !out.ends_with(&href) {
                        out.push_str(&format!(" ({href})"));
                    }
                }
            }
            _ => {}
        }
    }
    let mut text = String::with_capacity(out.len());
    let mut blank = 0;
    for line in out.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
        } else {
            blank = 0;
        }
        text.push_str(line);
        text.push('\n');
    }
    text.trim_start_matches('\n').to_string()
}

fn text_of(raw: &str, in_pre: bool) -> String {
    let decoded = decode_entities(raw);
    if in_pre {
        decoded
    } else {
        // Outside code, HTML's whitespace collapses.
        let mut collapsed = String::with_capacity(decoded.len());
        let mut space = false;
        for c in decoded.chars() {
            if c.is_whitespace() {
                if !space {
                    collapsed.push(' ');
                }
                space = true;
            } else {
                collapsed.push(c);
                space = false;
            }
        }
        collapsed
    }
}

fn ensure_blank_line(out: &mut String) {
    let trimmed = out.trim_end_matches(' ').len();
    out.truncate(trimmed);
    if out.is_empty() || out.ends_with("\n\n") {
        return;
    }
    out.push_str(if out.ends_with('\n') { "\n" } else { "\n\n" });
}

fn decode_entities(text: &str) -> String {
    if !text.contains('&') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let Some(end) = rest[..rest.len().min(12)].find(';') else {
            out.push('&');
            rest = &rest[1..];
            continue;
        };
        let entity = &rest[1..end];
        let decoded = match entity {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            "nbsp" => Some('\u{a0}'),
            _ => entity
                .strip_prefix("#x")
                .or_else(|| entity.strip_prefix("#X"))
                .and_then(|hex| u32::from_str_radix(hex, 16).ok())
                .or_else(|| entity.strip_prefix('#').and_then(|dec| dec.parse().ok()))
                .and_then(char::from_u32),
        };
        match decoded {
            Some(c) => {
                out.push(c);
                rest = &rest[end + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issue() -> IssueContent {
        IssueContent {
            slug: "paid-one".into(),
            title: "Paid one".into(),
            summary: "Half & half.".into(),
            date: "2026-10-08".into(),
            tier: Tier::Pro,
            free_html: "<p>The <a href=\"https://x.example/a?b=1&amp;c=2\">opening</a>.</p>\n\
                        <pre class=\"code\"><code class=\"language-python\"><span class=\"hl-keyword\">while</span> x &lt; 3:\n    step()</code></pre>"
                .into(),
            paid_html: Some("<p>PAID-SECRET here.</p><ul><li>one</li><li>two</li></ul>".into()),
        }
    }

    #[test]
    fn a_free_reader_gets_the_free_part_and_a_link_never_the_paid_part() {
        let letter = IssueLetter::render(&issue(), Tier::Free, "https://fp.example");
        assert!(!letter.html.contains("PAID-SECRET") && !letter.text.contains("PAID-SECRET"));
        assert!(letter.text.contains("The rest of this issue is for Pro readers."), "{}", letter.text);
        assert!(letter.text.contains("https://fp.example/issues/paid-one"));
        let whole = IssueLetter::render(&issue(), Tier::Pro, "https://fp.example");
        assert!(whole.html.contains("PAID-SECRET") && whole.text.contains("PAID-SECRET"));
        assert!(!whole.text.contains("is for Pro readers"));
    }

    #[test]
    fn text_keeps_code_links_and_lists() {
        let text = html_to_text(&format!("{}{}", issue().free_html, issue().paid_html.unwrap()));
        assert!(text.contains("The opening (https://x.example/a?b=1&c=2)."), "{text}");
        assert!(text.contains("while x < 3:\n    step()"), "{text}");
        assert!(text.contains("- one\n- two"), "{text}");
    }

    /// The colour `style/main.css` gives `class`, read from the file as a
    /// person would: the rule that names the class, its `color`.
    fn site_colour(class: &str) -> Option<String> {
        let css = include_str!("../../../style/main.css");
        let rule = css.lines().find(|line| {
            line.split('{')
                .next()
                .unwrap_or_default()
                .split(',')
                .any(|selector| selector.trim() == format!(".{class}"))
        })?;
        let color = rule.split("color:").nth(1)?;
        Some(color.split(';').next()?.trim().to_string())
    }

    /// The `style` attribute of the first element of `html` whose tag starts
    /// with `open`.
    fn style_of<'a>(html: &'a str, open: &str) -> &'a str {
        let at = html.find(open).unwrap_or_else(|| panic!("{open} in {html}"));
        let tag = &html[at..at + html[at..].find('>').unwrap()];
        tag.split("style=\"").nth(1).and_then(|style| style.split('"').next()).unwrap_or_default()
    }

    #[test]
    fn code_is_coloured_as_on_the_site_whatever_main_css_says() {
        // Every class the highlighter can write, in a code block of a letter:
        // each span carries the colour the site's stylesheet gives it, so a
        // colour changed in style/main.css changes the mail too.
        let spans: String = auditor::highlight_classes()
            .iter()
            .map(|class| format!("<span class=\"{class}\">x</span>"))
            .collect();
        let mut coloured = issue();
        coloured.free_html = format!("<pre class=\"code\"><code>{spans}</code></pre>");
        let letter = IssueLetter::render(&coloured, Tier::Pro, "https://fp.example");
        for class in auditor::highlight_classes() {
            let expected = site_colour(&class).unwrap_or_else(|| panic!("main.css colours .{class}"));
            let style = style_of(&letter.html, &format!("<span class=\"{class}\""));
            assert!(style.replace(' ', "").contains(&format!("color:{expected}")), ".{class}: {style}");
        }
        let pre = style_of(&letter.html, "<pre class=\"code\"");
        assert!(pre.contains("background: #1d232b"), "{pre}");
        assert!(pre.contains("white-space: pre-wrap"), "long lines wrap on a phone: {pre}");
        assert!(!letter.html.contains("<style"), "no stylesheet: mail apps drop them");
        assert!(!letter.html.contains("var(") && !letter.html.contains("rem;"), "{}", letter.html);
    }

    #[test]
    fn the_layout_around_the_issue_is_inlined_too() {
        let letter = IssueLetter::render(&issue(), Tier::Free, "https://fp.example");
        for (element, property) in [
            ("<div class=\"mail-page\"", "max-width: 640px"),
            ("<h1 class=\"mail-title\"", "font-size: 26px"),
            ("<div class=\"upgrade-card\"", "border-top: 4px solid #9a5b00"),
            ("<a href=\"https://x.example", "color: #9a5b00"),
        ] {
            let style = style_of(&letter.html, element);
            assert!(style.contains(property), "{element}: {style}");
        }
    }

    #[test]
    fn the_message_carries_the_one_click_headers() {
        let letter = IssueLetter::render(&issue(), Tier::Free, "https://fp.example");
        let from: Mailbox = "Fixed Point <news@fp.example>".parse().unwrap();
        let message = letter
            .message(&from, "ada@example.com", "https://fp.example/unsubscribe/fpu_1", "<1.abc@fp.example>")
            .unwrap();
        let raw = String::from_utf8(message.formatted()).unwrap();
        assert!(raw.contains("List-Unsubscribe: <https://fp.example/unsubscribe/fpu_1>"), "{raw}");
        assert!(raw.contains("List-Unsubscribe-Post: List-Unsubscribe=One-Click"), "{raw}");
        assert!(raw.contains("Message-ID: <1.abc@fp.example>"), "{raw}");
        assert!(raw.contains("Date: "), "{raw}");
        assert!(raw.contains("multipart/alternative"), "{raw}");
        assert!(!raw.contains(UNSUBSCRIBE_SLOT));
    }
}
