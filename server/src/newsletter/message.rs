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

/// The stylesheet of the HTML part, inlined into each element's `style`: the
/// site's code colours and a layout that reads in a phone's mail app.
const STYLES: &[(&str, &str)] = &[
    ("body", "margin:0;padding:0;background:#f6f4ef;"),
    ("pre", "background:#1d232b;color:#e8e6e1;border-radius:6px;padding:12px 14px;overflow-x:auto;font-size:13px;line-height:1.5;white-space:pre-wrap;word-break:break-word;"),
    ("code", "font-family:ui-monospace,Menlo,Consolas,monospace;"),
    ("h2", "font-size:20px;line-height:1.3;margin:24px 0 8px;"),
    ("h3", "font-size:17px;line-height:1.3;margin:20px 0 6px;"),
    ("p", "margin:0 0 14px;"),
    ("a", "color:#1d5fa8;"),
    ("blockquote", "margin:0 0 14px;padding-left:12px;border-left:3px solid #d9d4c7;color:#555;"),
];

/// The colours of highlighted code, by the auditor's highlight classes.
const CODE_COLOURS: &[(&str, &str)] = &[
    ("hl-keyword", "color:#f0a35e;"),
    ("hl-string", "color:#a8d59a;"),
    ("hl-string-special", "color:#a8d59a;"),
    ("hl-comment", "color:#8d96a3;font-style:italic;"),
    ("hl-number", "color:#e9c46a;"),
    ("hl-constant", "color:#e9c46a;"),
    ("hl-constant-builtin", "color:#e9c46a;"),
    ("hl-function", "color:#8ec5ff;"),
    ("hl-function-method", "color:#8ec5ff;"),
    ("hl-function-builtin", "color:#8ec5ff;"),
    ("hl-type", "color:#d7a6f5;"),
    ("hl-constructor", "color:#d7a6f5;"),
    ("hl-module", "color:#d7a6f5;"),
    ("hl-property", "color:#f3b8c5;"),
    ("hl-attribute", "color:#f3b8c5;"),
    ("hl-label", "color:#f3b8c5;"),
    ("hl-tag", "color:#f3b8c5;"),
    ("hl-escape", "color:#ffd49a;"),
    ("hl-embedded", "color:#ffd49a;"),
    ("hl-variable-builtin", "color:#ffd49a;"),
    ("hl-operator", "color:#c9ccd1;"),
    ("hl-punctuation", "color:#c9ccd1;"),
    ("hl-punctuation-bracket", "color:#c9ccd1;"),
    ("hl-punctuation-delimiter", "color:#c9ccd1;"),
];

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
                "<div style=\"margin:24px 0;padding:16px;border:1px solid #d9d4c7;border-radius:8px;background:#fffdf8;\">\
                 <p style=\"margin:0 0 10px;\"><strong>{}</strong></p>\
                 <p style=\"margin:0;\"><a href=\"{}\" style=\"color:#1d5fa8;\">Read it on the site</a> · \
                 <a href=\"{}\" style=\"color:#1d5fa8;\">See the plans</a></p></div>",
                escape(line),
                escape(url),
                escape(pricing)
            )
        })
        .unwrap_or_default();
    let html = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{title}</title></head>\
         <body><div style=\"max-width:640px;margin:0 auto;padding:20px 16px;font-family:Georgia,'Times New Roman',serif;\
         font-size:17px;line-height:1.6;color:#1f1f1f;background:#ffffff;\">\
         <p style=\"margin:0 0 4px;font-family:system-ui,sans-serif;font-size:13px;color:#666;\">Fixed Point · {date}</p>\
         <h1 style=\"font-size:26px;line-height:1.25;margin:0 0 8px;\"><a href=\"{url}\" style=\"color:#1f1f1f;text-decoration:none;\">{title}</a></h1>\
         <p style=\"margin:0 0 20px;color:#555;\">{summary}</p>\
         {body}{rest}\
         <hr style=\"border:none;border-top:1px solid #e3ded2;margin:28px 0 12px;\">\
         <p style=\"font-family:system-ui,sans-serif;font-size:13px;color:#666;\">\
         <a href=\"{url}\" style=\"color:#1d5fa8;\">Read this issue on the site</a> · \
         <a href=\"{UNSUBSCRIBE_SLOT}\" style=\"color:#1d5fa8;\">Unsubscribe</a></p></div></body></html>",
        date = escape(&issue.date),
        url = escape(url),
    );
    inline_styles(&html)
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

/// Gives each element of the sanitised issue HTML the style its tag or
/// highlight class has in [`STYLES`] and [`CODE_COLOURS`]: the stylesheet,
/// inlined. The issue HTML is ammonia's output (no `style` attributes of its
/// own), so a tag either has a class attribute we know or none.
fn inline_styles(html: &str) -> String {
    let mut out = String::with_capacity(html.len() + html.len() / 4);
    let mut rest = html;
    while let Some(at) = rest.find('<') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let Some(end) = rest.find('>') else { break };
        let tag = &rest[..=end];
        rest = &rest[end + 1..];
        let name_end = tag[1..].find(|c: char| !c.is_ascii_alphanumeric()).map_or(tag.len() - 1, |n| n + 1);
        let name = &tag[1..name_end];
        if name.is_empty() || tag.contains("style=\"") {
            out.push_str(tag);
            continue;
        }
        let mut style = STYLES.iter().find(|(tag_name, _)| *tag_name == name).map(|(_, s)| s.to_string());
        if let Some(class_at) = tag.find("class=\"") {
            let classes = &tag[class_at + 7..];
            let classes = &classes[..classes.find('"').unwrap_or(classes.len())];
            for class in classes.split_whitespace() {
                if let Some((_, colour)) = CODE_COLOURS.iter().find(|(known, _)| *known == class) {
                    style.get_or_insert_with(String::new).push_str(colour);
                }
            }
        }
        match style {
            Some(style) => {
                let close = if tag.ends_with("/>") { tag.len() - 2 } else { tag.len() - 1 };
                out.push_str(&tag[..close]);
                out.push_str(&format!(" style=\"{style}\""));
                out.push_str(&tag[close..]);
            }
            None => out.push_str(tag),
        }
    }
    out.push_str(rest);
    out
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

    #[test]
    fn styles_are_inlined_and_code_is_coloured_as_on_the_site() {
        let letter = IssueLetter::render(&issue(), Tier::Pro, "https://fp.example");
        assert!(
            letter.html.contains("<span class=\"hl-keyword\" style=\"color:#f0a35e;\">while</span>"),
            "{}",
            letter.html
        );
        assert!(letter.html.contains("<pre class=\"code\" style=\"background:#1d232b;"), "{}", letter.html);
        assert!(!letter.html.contains("<style"), "no stylesheet: mail apps drop them");
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
