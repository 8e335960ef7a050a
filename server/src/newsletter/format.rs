//! The issue file format (PRODUCT.md section 3): YAML front matter between
//! `---` lines, then Markdown; a line holding only `<!-- paywall -->` splits
//! the free part from the paid remainder.
//!
//! The front matter is read by a small parser of its own rather than a YAML
//! library: issues use five `key: value` lines, and a parser that knows that
//! names the line and the field at fault instead of a YAML path. Values may
//! be plain, `"double quoted"` (with `\"`, `\\`, `\n` escapes) or
//! `'single quoted'` (with `''`); anything else YAML allows (lists, block
//! scalars, anchors) is refused with a clear message.
//!
//! Markdown becomes HTML with pulldown-cmark; code blocks in a language the
//! auditor knows are highlighted with its grammars; the result is sanitised
//! with ammonia, so an issue file cannot put a script on the site.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::OnceLock;

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};
use sha2::{Digest, Sha256};

use super::Tier;
use crate::stored_text::{self, limits, Problem};

/// Issue files larger than this are refused (a newsletter issue is a few
/// kilobytes; this is a guard, not a budget).
pub const MAX_ISSUE_BYTES: usize = 1024 * 1024;

const PAYWALL: &str = "<!-- paywall -->";
const KEYS: [&str; 5] = ["title", "slug", "date", "tier", "summary"];

/// An issue file, read and rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedIssue {
    pub title: String,
    pub slug: String,
    /// The line of the file that gives the slug (for errors about it).
    pub slug_line: usize,
    /// `YYYY-MM-DD`.
    pub date: String,
    pub tier: Tier,
    pub summary: String,
    /// What every reader sees (empty when the whole issue is paid).
    pub free_html: String,
    /// What only readers entitled to `tier` see (`None` for a free issue).
    pub paid_html: Option<String>,
    pub free_words: i64,
    pub paid_words: i64,
    /// SHA-256 of the file's bytes: a re-import of the same file changes
    /// nothing.
    pub source_hash: String,
}

/// What is wrong with an issue file, and on which line (1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for FormatError {}

fn error(line: usize, message: impl Into<String>) -> FormatError {
    FormatError { line, message: message.into() }
}

/// Reads an issue file. Never panics; every refusal names its line.
pub fn parse_issue(bytes: &[u8]) -> Result<ParsedIssue, FormatError> {
    if bytes.len() > MAX_ISSUE_BYTES {
        return Err(error(
            1,
            format!("the file is {} bytes; issues may be at most {MAX_ISSUE_BYTES}", bytes.len()),
        ));
    }
    let text = std::str::from_utf8(bytes).map_err(|problem| {
        let line = bytes[..problem.valid_up_to()].iter().filter(|b| **b == b'\n').count() + 1;
        error(line, "the file is not UTF-8 text")
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let lines: Vec<&str> = text.split('\n').map(|line| line.strip_suffix('\r').unwrap_or(line)).collect();

    if lines.first().map(|line| line.trim_end()) != Some("---") {
        return Err(error(
            1,
            "an issue starts with front matter: a line `---`, then `key: value` lines, then `---`",
        ));
    }
    let Some(close) = lines[1..].iter().position(|line| line.trim_end() == "---").map(|at| at + 1) else {
        return Err(error(1, "the front matter is not closed by a `---` line"));
    };
    // The stored-text rule: no NUL anywhere (PostgreSQL's text cannot hold
    // one), named by the field whose line holds it.
    if let Some(index) = lines.iter().position(|line| line.contains('\u{0}')) {
        let field = match lines[index].split_once(':') {
            Some((key, _)) if (1..close).contains(&index) => key.trim().to_string(),
            _ if (1..close).contains(&index) => "front matter".to_string(),
            _ => "body".to_string(),
        };
        return Err(error(index + 1, format!("{field}: {}", Problem::Nul)));
    }
    let fields = front_matter(&lines[1..close])?;
    let field = |key: &str| fields.get(key).map(|(_, value)| value.as_str());
    let line_of = |key: &str| fields.get(key).map_or(close + 1, |(line, _)| *line);
    for key in KEYS {
        match field(key) {
            None => return Err(error(close + 1, format!("front matter: `{key}` is missing"))),
            Some(value) if value.trim().is_empty() => {
                return Err(error(line_of(key), format!("{key}: must not be empty")))
            }
            Some(_) => {}
        }
    }
    let title = field("title").unwrap_or_default().trim().to_string();
    stored_text::check("title:", &title, limits::ISSUE_TITLE)
        .map_err(|problem| error(line_of("title"), problem.to_string()))?;
    let slug = field("slug").unwrap_or_default().trim().to_string();
    if !valid_slug(&slug) {
        return Err(error(
            line_of("slug"),
            "slug: lowercase letters, digits and single hyphens between them (for example `fixed-points`), at most 100 characters",
        ));
    }
    let date = field("date").unwrap_or_default().trim().to_string();
    if !valid_date(&date) {
        return Err(error(line_of("date"), format!("date: `{date}` is not a date written YYYY-MM-DD")));
    }
    let tier_text = field("tier").unwrap_or_default().trim();
    let tier = Tier::from_name(tier_text).ok_or_else(|| {
        error(line_of("tier"), format!("tier: `{tier_text}` is not one of free, pro, founder"))
    })?;
    let summary = field("summary").unwrap_or_default().trim().to_string();
    stored_text::check("summary:", &summary, limits::ISSUE_SUMMARY)
        .map_err(|problem| error(line_of("summary"), problem.to_string()))?;

    // The body, split at the paywall line (outside code blocks).
    let body_start = close + 1;
    let body = &lines[body_start.min(lines.len())..];
    let mut fence: Option<(char, usize)> = None;
    let mut paywall: Option<usize> = None;
    for (index, line) in body.iter().enumerate() {
        let trimmed = line.trim();
        if let Some(opening) = fence_marker(trimmed) {
            match fence {
                None => fence = Some(opening),
                Some((c, n))
                    if opening.0 == c
                        && opening.1 >= n
                        && trimmed.trim_start_matches(c).trim().is_empty() =>
                {
                    fence = None
                }
                Some(_) => {}
            }
            continue;
        }
        if fence.is_none() && is_paywall(trimmed) {
            if let Some(first) = paywall {
                return Err(error(
                    body_start + index + 1,
                    format!("a second paywall line (the first is line {})", body_start + first + 1),
                ));
            }
            paywall = Some(index);
        } else if fence.is_none() && looks_like_paywall(trimmed) {
            return Err(error(
                body_start + index + 1,
                format!("{trimmed:?} looks like a paywall line but is not one: write it alone as {PAYWALL}"),
            ));
        }
    }
    let (free_md, paid_md) = match paywall {
        Some(at) => {
            if tier == Tier::Free {
                return Err(error(
                    body_start + at + 1,
                    "a paywall line in a free issue: set tier to pro or founder, or remove the line",
                ));
            }
            (body[..at].join("\n"), Some(body[at + 1..].join("\n")))
        }
        // Without a paywall the whole issue has the front matter's tier.
        None if tier == Tier::Free => (body.join("\n"), None),
        None => (String::new(), Some(body.join("\n"))),
    };
    if let Some(paid) = &paid_md {
        if paid.trim().is_empty() {
            return Err(match paywall {
                Some(at) => error(body_start + at + 1, "nothing follows the paywall: the paid part is empty"),
                None => error(body_start + 1, "the issue has no body"),
            });
        }
    }
    if paywall.is_some() && free_md.trim().is_empty() {
        return Err(error(
            body_start + paywall.unwrap_or(0) + 1,
            "nothing comes before the paywall: remove the line to make the whole issue paid",
        ));
    }
    if paid_md.is_none() && free_md.trim().is_empty() {
        return Err(error(body_start + 1, "the issue has no body"));
    }

    Ok(ParsedIssue {
        title,
        slug_line: line_of("slug"),
        slug,
        date,
        tier,
        summary,
        free_html: render_markdown(&free_md),
        free_words: words(&free_md),
        paid_words: paid_md.as_deref().map_or(0, words),
        paid_html: paid_md.as_deref().map(render_markdown),
        source_hash: hex::encode(Sha256::digest(bytes)),
    })
}

/// `key: value` lines into a map of key to (line, value).
fn front_matter(lines: &[&str]) -> Result<HashMap<String, (usize, String)>, FormatError> {
    let mut fields = HashMap::new();
    for (index, raw) in lines.iter().enumerate() {
        let line_no = index + 2;
        let line = raw.trim_end();
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        if line.starts_with(' ') || line.starts_with('\t') || line.starts_with('-') {
            return Err(error(
                line_no,
                "front matter holds only `key: value` lines (no lists or nested values)",
            ));
        }
        let Some((key, value)) = line.split_once(':') else {
            return Err(error(line_no, "expected `key: value`"));
        };
        let key = key.trim();
        if !KEYS.contains(&key) {
            return Err(error(line_no, format!("unknown key `{key}` (the keys are {})", KEYS.join(", "))));
        }
        let value = scalar(value.trim()).map_err(|problem| error(line_no, format!("{key}: {problem}")))?;
        if let Some((first, _)) = fields.insert(key.to_string(), (line_no, value)) {
            return Err(error(line_no, format!("`{key}` is given twice (first on line {first})")));
        }
    }
    Ok(fields)
}

/// One YAML scalar: plain, double- or single-quoted.
fn scalar(value: &str) -> Result<String, String> {
    if let Some(rest) = value.strip_prefix('"') {
        let mut out = String::new();
        let mut chars = rest.chars();
        loop {
            match chars.next() {
                None => return Err("the closing `\"` is missing".into()),
                Some('"') => break,
                Some('\\') => match chars.next() {
                    Some('"') => out.push('"'),
                    Some('\\') => out.push('\\'),
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some('/') => out.push('/'),
                    other => {
                        return Err(format!(
                            "unknown escape `\\{}`",
                            other.map(String::from).unwrap_or_default()
                        ))
                    }
                },
                Some(c) => out.push(c),
            }
        }
        return trailing(chars.as_str()).map(|()| out);
    }
    if let Some(rest) = value.strip_prefix('\'') {
        let mut out = String::new();
        let mut chars = rest.chars().peekable();
        loop {
            match chars.next() {
                None => return Err("the closing `'` is missing".into()),
                Some('\'') if chars.peek() == Some(&'\'') => {
                    chars.next();
                    out.push('\'');
                }
                Some('\'') => break,
                Some(c) => out.push(c),
            }
        }
        return trailing(&chars.collect::<String>()).map(|()| out);
    }
    if value.starts_with(['[', '{', '|', '>', '&', '*', '!']) {
        return Err("only plain or quoted text is supported here".into());
    }
    // A plain scalar ends at ` #` (a comment).
    let plain = value.split(" #").next().unwrap_or_default().trim_end();
    Ok(plain.to_string())
}

fn trailing(rest: &str) -> Result<(), String> {
    let rest = rest.trim();
    if rest.is_empty() || rest.starts_with('#') {
        Ok(())
    } else {
        Err(format!("unexpected `{rest}` after the closing quote"))
    }
}

fn valid_slug(slug: &str) -> bool {
    !slug.is_empty()
        && slug.len() <= 100
        && !slug.starts_with('-')
        && !slug.ends_with('-')
        && !slug.contains("--")
        && slug.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

fn valid_date(date: &str) -> bool {
    let bytes = date.as_bytes();
    if bytes.len() != 10 || bytes[4] != b'-' || bytes[7] != b'-' {
        return false;
    }
    let number = |range: std::ops::Range<usize>| {
        date.get(range)
            .filter(|part| part.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|part| part.parse::<u32>().ok())
    };
    let (Some(year), Some(month), Some(day)) = (number(0..4), number(5..7), number(8..10)) else {
        return false;
    };
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1970..=9999).contains(&year) && (1..=days).contains(&day)
}

/// The fence a line opens or closes (```` ``` ```` or `~~~`, three or more).
/// `<!-- paywall -->` in any spacing and case: `<!--paywall-->`,
/// `<!--  PAYWALL  -->`.
fn is_paywall(line: &str) -> bool {
    line.strip_prefix("<!--")
        .and_then(|rest| rest.strip_suffix("-->"))
        .is_some_and(|inner| inner.trim().eq_ignore_ascii_case("paywall"))
}

/// A line that was meant as the paywall and would silently not be one: an
/// HTML comment that mentions the paywall and is not exactly it, or the word
/// between comment-like marks that do not close.
fn looks_like_paywall(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    lower.contains("paywall")
        && (lower.starts_with("<!") || lower.ends_with("->"))
        && lower.len() <= 40
        && !is_paywall(line)
}

fn fence_marker(line: &str) -> Option<(char, usize)> {
    let c = line.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let n = line.chars().take_while(|x| *x == c).count();
    (n >= 3).then_some((c, n))
}

fn words(markdown: &str) -> i64 {
    markdown.split_whitespace().filter(|word| word.chars().any(char::is_alphanumeric)).count() as i64
}

/// Markdown to sanitised HTML, with code blocks highlighted.
pub fn render_markdown(markdown: &str) -> String {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_FOOTNOTES;
    let mut events = Vec::new();
    let mut code: Option<(Option<auditor::Language>, String, String)> = None;
    for event in Parser::new_ext(markdown, options) {
        match (&mut code, event) {
            (None, Event::Start(Tag::CodeBlock(kind))) => {
                let info = match &kind {
                    CodeBlockKind::Fenced(info) => info.split_whitespace().next().unwrap_or("").to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                code = Some((auditor::Language::from_name(&info), info, String::new()));
            }
            (Some((_, _, text)), Event::Text(chunk)) => text.push_str(&chunk),
            (Some(_), Event::End(TagEnd::CodeBlock)) => {
                if let Some((language, info, text)) = code.take() {
                    events.push(Event::Html(code_block(language, &info, &text).into()));
                }
            }
            (_, event) => events.push(event),
        }
    }
    let mut html = String::with_capacity(markdown.len() * 3 / 2);
    pulldown_cmark::html::push_html(&mut html, events.into_iter());
    sanitiser().clean(&html).to_string()
}

fn code_block(language: Option<auditor::Language>, info: &str, text: &str) -> String {
    let highlighted = language.and_then(|language| auditor::highlight_html(language, text));
    let class =
        language.map(|language| format!(" class=\"language-{}\"", language.name().to_ascii_lowercase()));
    let body = highlighted.unwrap_or_else(|| escape(text));
    let label = if info.is_empty() { String::new() } else { format!(" data-lang=\"{}\"", escape(info)) };
    // A block the auditor reads carries its audit page share fragment: the
    // issue page turns it into "Audit this loop" (mail and feeds ignore it).
    let audit = language
        .map(|language| format!(" data-audit=\"{}\"", share_fragment(language, text)))
        .unwrap_or_default();
    format!("<pre class=\"code\"{label}{audit}><code{}>{body}</code></pre>\n", class.unwrap_or_default())
}

/// The audit page's share fragment of `source` (what its worker makes, see
/// `auditor/wasm/audit-worker.js`): `v1.LANGUAGE.DATA`, the source deflated
/// (raw deflate) and base64url-encoded without padding.
pub fn share_fragment(language: auditor::Language, source: &str) -> String {
    use std::io::Write;
    let mut encoder = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
    // Writing to a Vec cannot fail.
    let _ = encoder.write_all(source.as_bytes());
    let deflated = encoder.finish().unwrap_or_default();
    format!("v1.{}.{}", language.name().to_ascii_lowercase(), base64url(&deflated))
}

/// Base64 with the URL alphabet (`-`, `_`) and no padding.
fn base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        let symbols = chunk.len() + 1;
        for i in 0..symbols {
            out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
        }
    }
    out
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn sanitiser() -> &'static ammonia::Builder<'static> {
    static CLASSES: OnceLock<Vec<String>> = OnceLock::new();
    static BUILDER: OnceLock<ammonia::Builder<'static>> = OnceLock::new();
    BUILDER.get_or_init(|| {
        let span_classes = CLASSES.get_or_init(auditor::highlight_classes);
        let code_classes: HashSet<&'static str> = [
            "language-python",
            "language-javascript",
            "language-typescript",
            "language-tsx",
            "language-bash",
            "language-go",
            "language-rust",
        ]
        .into_iter()
        .collect();
        let mut classes: HashMap<&'static str, HashSet<&'static str>> = HashMap::new();
        classes.insert("span", span_classes.iter().map(String::as_str).collect());
        classes.insert("code", code_classes);
        classes.insert("pre", ["code"].into_iter().collect());
        let mut builder = ammonia::Builder::default();
        builder.allowed_classes(classes).add_tag_attributes("pre", ["data-lang", "data-audit"]);
        builder
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(front: &str, body: &str) -> Vec<u8> {
        format!("---\n{front}\n---\n{body}").into_bytes()
    }

    const FRONT: &str =
        "title: \"Loops\"\nslug: loops\ndate: 2026-11-02\ntier: pro\nsummary: Why loops stop.";

    #[test]
    fn a_paywalled_issue_splits_into_free_and_paid_html() {
        let issue =
            parse_issue(&file(FRONT, "Free words here.\n\n<!-- paywall -->\n\nPaid *secret*.\n")).unwrap();
        assert_eq!(issue.title, "Loops");
        assert_eq!(issue.tier, Tier::Pro);
        assert!(issue.free_html.contains("Free words here."));
        assert!(!issue.free_html.contains("secret"));
        assert!(issue.paid_html.as_deref().unwrap().contains("<em>secret</em>"));
        assert_eq!((issue.free_words, issue.paid_words), (3, 2));
    }

    #[test]
    fn without_a_paywall_the_whole_issue_has_its_tier() {
        let paid = parse_issue(&file(FRONT, "All of it is paid.\n")).unwrap();
        assert_eq!(paid.free_html, "");
        assert!(paid.paid_html.unwrap().contains("All of it"));
        let free = parse_issue(&file(&FRONT.replace("tier: pro", "tier: free"), "All free.\n")).unwrap();
        assert!(free.free_html.contains("All free."));
        assert_eq!(free.paid_html, None);
    }

    #[test]
    fn the_paywall_is_found_in_any_spacing_and_a_near_miss_is_an_error() {
        for line in ["<!--paywall-->", "<!--  PAYWALL  -->", "   <!-- Paywall -->"] {
            let issue = parse_issue(&file(FRONT, &format!("Free.\n\n{line}\n\nPaid.\n"))).unwrap();
            assert!(!issue.free_html.contains("Paid."), "{line:?} is the paywall");
            assert!(issue.paid_html.unwrap().contains("Paid."));
        }
        for line in ["<!-- paywall", "<!-- paywall here -->", "<! -- paywall -->", "paywall -->"] {
            let problem = parse_issue(&file(FRONT, &format!("Free.\n{line}\nPaid.\n"))).unwrap_err();
            assert_eq!(problem.line, 9, "{problem}");
            assert!(problem.message.contains("looks like a paywall line"), "{problem}");
        }
        // Prose that mentions the paywall is prose.
        let issue = parse_issue(&file(FRONT, "Free.\n<!-- paywall -->\nWhy a paywall -> a living.\n"));
        assert!(issue.is_ok(), "{issue:?}");
    }

    #[test]
    fn a_code_block_the_auditor_reads_carries_its_share_fragment() {
        let html = render_markdown("```python\nwhile True:\n    break\n```\n\n```text\nplain\n```\n");
        let fragment = share_fragment(auditor::Language::Python, "while True:\n    break\n");
        assert!(html.contains(&format!("data-audit=\"{fragment}\"")), "{html}");
        assert_eq!(html.matches("data-audit=").count(), 1, "a text block has none");
        // The fragment is what the page's worker unpacks: inflate it back.
        let data = fragment.strip_prefix("v1.python.").expect("versioned");
        assert!(data.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'), "{data}");
        let bytes = decode_base64url(data);
        let mut source = String::new();
        std::io::Read::read_to_string(&mut flate2::read::DeflateDecoder::new(&bytes[..]), &mut source)
            .unwrap();
        assert_eq!(source, "while True:\n    break\n");
        assert_eq!(base64url(b"f"), "Zg");
        assert_eq!(base64url(b"fo"), "Zm8");
        assert_eq!(base64url(b"foo"), "Zm9v");
        assert_eq!(base64url(&[0xfb, 0xff]), "-_8");
    }

    fn decode_base64url(text: &str) -> Vec<u8> {
        const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let values: Vec<u32> =
            text.bytes().map(|b| ALPHABET.iter().position(|a| *a == b).unwrap() as u32).collect();
        let mut out = Vec::new();
        for chunk in values.chunks(4) {
            let n = chunk.iter().enumerate().fold(0u32, |n, (i, v)| n | v << (18 - 6 * i));
            for i in 0..chunk.len() - 1 {
                out.push((n >> (16 - 8 * i)) as u8);
            }
        }
        out
    }

    #[test]
    fn a_paywall_line_inside_a_code_block_is_code() {
        let body = "Intro.\n\n```html\n<!-- paywall -->\n```\n\nStill free.\n";
        let issue = parse_issue(&file(&FRONT.replace("tier: pro", "tier: free"), body)).unwrap();
        assert!(issue.free_html.contains("&lt;!-- paywall --&gt;"));
        assert!(issue.free_html.contains("Still free."));
    }

    #[test]
    fn bad_files_name_the_line_and_the_field() {
        let cases: Vec<(Vec<u8>, usize, &str)> = vec![
            (b"no front matter".to_vec(), 1, "front matter"),
            (b"---\ntitle: x\n".to_vec(), 1, "not closed"),
            (file(&FRONT.replace("date: 2026-11-02", "date: 2026-02-30"), "x"), 4, "date:"),
            (file(&FRONT.replace("tier: pro", "tier: gold"), "x"), 5, "tier:"),
            (file(&FRONT.replace("slug: loops", "slug: Loops!"), "x"), 3, "slug:"),
            (file(&FRONT.replace("summary: Why loops stop.", ""), "x"), 7, "`summary` is missing"),
            (file(&format!("{FRONT}\nauthor: me"), "x"), 7, "unknown key `author`"),
            (file(&format!("{FRONT}\ntitle: again"), "x"), 7, "given twice"),
            (file(&FRONT.replace("title: \"Loops\"", "title: \"Loops"), "x"), 2, "closing"),
            (file(&FRONT.replace("title: \"Loops\"", "title:\n  - a"), "x"), 3, "no lists"),
            (file(FRONT, "a\n<!-- paywall -->\nb\n<!-- paywall -->\nc"), 11, "second paywall"),
            (file(&FRONT.replace("tier: pro", "tier: free"), "a\n<!-- paywall -->\nb"), 9, "free issue"),
            (file(FRONT, "a\n<!-- paywall -->\n  \n"), 9, "paid part is empty"),
            (file(FRONT, "   \n"), 8, "no body"),
            (vec![b'-', b'-', b'-', b'\n', 0xff, 0xfe], 2, "UTF-8"),
            // The stored-text rule, named by field and line.
            (file(&FRONT.replace("Loops", "Lo\u{0}ops"), "x"), 2, "title: must not contain NUL"),
            (file(&FRONT.replace("Loops", "Lo\u{1b}[31mops"), "x"), 2, "title: must not contain control"),
            (file(&FRONT.replace("Loops", &"L".repeat(201)), "x"), 2, "title: must be at most 200"),
            (file(&FRONT.replace("Why", &"W".repeat(501)), "x"), 6, "summary: must be at most 500"),
            (file(FRONT, "a\nb\u{0}c"), 9, "body: must not contain NUL"),
        ];
        for (bytes, line, needle) in cases {
            let problem = parse_issue(&bytes).unwrap_err();
            assert!(problem.message.contains(needle), "{problem} should mention {needle:?}");
            assert_eq!(problem.line, line, "{problem} for {:?}", String::from_utf8_lossy(&bytes));
        }
    }

    #[test]
    fn oversized_files_are_refused_before_parsing() {
        let mut bytes = file(FRONT, "x");
        bytes.resize(MAX_ISSUE_BYTES + 1, b'a');
        assert!(parse_issue(&bytes).unwrap_err().message.contains("at most"));
    }

    #[test]
    fn quoted_values_unescape() {
        assert_eq!(scalar(r#""a \"b\" \\ c" # note"#).unwrap(), "a \"b\" \\ c");
        assert_eq!(scalar("'it''s'").unwrap(), "it's");
        assert_eq!(scalar("plain text # comment").unwrap(), "plain text");
        assert!(scalar("[a, b]").is_err());
    }

    #[test]
    fn html_in_issues_is_sanitised() {
        let html = render_markdown(
            "<script>alert(1)</script>\n\n<a href=\"javascript:alert(1)\" onclick=\"x()\">link</a>\n\n<img src=x onerror=alert(1)>",
        );
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("javascript:"), "{html}");
        assert!(!html.contains("onclick"), "{html}");
        assert!(!html.contains("onerror"), "{html}");
    }

    #[test]
    fn code_blocks_are_highlighted_on_the_server() {
        let html = render_markdown("```python\nwhile True:\n    break\n```\n\n```text\n<b>plain</b>\n```\n");
        assert!(html.contains("<span class=\"hl-keyword\">while</span>"), "{html}");
        assert!(html.contains("class=\"language-python\""), "{html}");
        assert!(html.contains("&lt;b&gt;plain&lt;/b&gt;"), "{html}");
    }
}
