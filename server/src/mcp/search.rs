//! The archive search of `search_archive`: every word of the query must
//! appear in an issue (case-insensitively, in its title, summary or text);
//! matches in the title count most. The archive of a weekly newsletter is a
//! few hundred issues at most, so it is read whole and searched in memory,
//! the same way on both databases.

use crate::newsletter::IssueRecord;

/// The newest issues a search reads: years of a weekly newsletter.
pub const MAX_ISSUES_SEARCHED: i64 = 2_000;
/// Characters of text shown around the first match.
const EXCERPT_CHARS: usize = 240;

/// The lowercase words of a query, or a message the model can act on.
pub fn query_words(query: &str) -> Result<Vec<String>, String> {
    if query.len() > 200 {
        return Err("query must be at most 200 bytes: a few words".to_string());
    }
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric() && c != '_' && c != '-')
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .collect();
    if words.is_empty() {
        return Err("query must hold at least one word".to_string());
    }
    Ok(words)
}

/// The issues holding every word, best first, at most `limit`, each with an
/// excerpt around its first match in the text.
pub fn rank(words: &[String], issues: Vec<IssueRecord>, limit: usize) -> Vec<(IssueRecord, String)> {
    let mut scored: Vec<(u32, IssueRecord, String)> = issues
        .into_iter()
        .filter_map(|issue| {
            let mut text = html_to_text(&issue.free_html);
            if let Some(paid) = &issue.paid_html {
                text.push('\n');
                text.push_str(&html_to_text(paid));
            }
            let title = issue.title.to_lowercase();
            let summary = issue.summary.to_lowercase();
            let body = text.to_lowercase();
            let mut score = 0;
            for word in words {
                let in_title = title.contains(word.as_str());
                let in_summary = summary.contains(word.as_str());
                let in_body = body.matches(word.as_str()).count();
                if !in_title && !in_summary && in_body == 0 {
                    return None;
                }
                score += u32::from(in_title) * 10 + u32::from(in_summary) * 4 + in_body.min(10) as u32;
            }
            let excerpt = excerpt(&text, &body, &words[0]);
            Some((score, issue, excerpt))
        })
        .collect();
    // Best score first; among equals the newest (the input's order).
    scored.sort_by_key(|(score, _, _)| std::cmp::Reverse(*score));
    scored.into_iter().take(limit).map(|(_, issue, excerpt)| (issue, excerpt)).collect()
}

/// About [`EXCERPT_CHARS`] characters of `text` around the first place
/// `word` appears in it (`lower` is `text` lowercased), or its start.
fn excerpt(text: &str, lower: &str, word: &str) -> String {
    // Lowercasing can change byte lengths, so positions are taken in
    // characters of the lowercased text and mapped back approximately.
    let at_char = lower.find(word).map_or(0, |at| lower[..at].chars().count());
    let start = at_char.saturating_sub(EXCERPT_CHARS / 3);
    let chars: Vec<char> = text.chars().collect();
    let end = (start + EXCERPT_CHARS).min(chars.len());
    let start = start.min(end);
    let mut out: String =
        chars[start..end].iter().collect::<String>().split_whitespace().collect::<Vec<_>>().join(" ");
    if start > 0 {
        out.insert_str(0, "… ");
    }
    if end < chars.len() {
        out.push_str(" …");
    }
    out
}

/// The text of the site's rendered issue HTML: tags dropped, block ends as
/// line breaks, the few entities the renderer writes decoded. The HTML is
/// our own renderer's (sanitised on import), not arbitrary markup.
pub fn html_to_text(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    while let Some(open) = rest.find('<') {
        out.push_str(&decode_entities(&rest[..open]));
        let Some(close) = rest[open..].find('>') else {
            rest = "";
            break;
        };
        let tag = rest[open + 1..open + close].trim_start_matches('/').to_ascii_lowercase();
        let name = tag.split(|c: char| c.is_whitespace() || c == '/').next().unwrap_or_default();
        if matches!(
            name,
            "p" | "br" | "li" | "pre" | "h1" | "h2" | "h3" | "h4" | "h5" | "h6" | "tr" | "blockquote" | "div"
        ) && !out.ends_with('\n')
        {
            out.push('\n');
        }
        rest = &rest[open + close + 1..];
    }
    out.push_str(&decode_entities(rest));
    let mut text = String::with_capacity(out.len());
    let mut blank = 0;
    for line in out.lines() {
        if line.trim().is_empty() {
            blank += 1;
            if blank == 1 && !text.is_empty() {
                text.push('\n');
            }
        } else {
            blank = 0;
            text.push_str(line.trim_end());
            text.push('\n');
        }
    }
    text.trim_end().to_string()
}

fn decode_entities(text: &str) -> String {
    if !text.contains('&') {
        return text.to_string();
    }
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&nbsp;", " ")
        .replace("&amp;", "&")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::newsletter::Tier;

    fn issue(slug: &str, title: &str, free: &str, paid: Option<&str>) -> IssueRecord {
        IssueRecord {
            slug: slug.into(),
            title: title.into(),
            date: "2026-11-30".into(),
            tier: Tier::Pro,
            summary: String::new(),
            free_html: free.into(),
            paid_html: paid.map(Into::into),
            paid_words: 0,
            updated_at: 0,
        }
    }

    #[test]
    fn html_becomes_lines_of_text() {
        assert_eq!(
            html_to_text("<h2>Fixed points</h2><p>A loop &amp; its <em>state</em>.</p><pre><code>x &lt; 1</code></pre>"),
            "Fixed points\nA loop & its state.\nx < 1"
        );
    }

    #[test]
    fn every_word_must_appear_and_titles_weigh_most() {
        let words = query_words("Cycle, DETECTION").unwrap();
        assert_eq!(words, ["cycle", "detection"]);
        let found = rank(
            &words,
            vec![
                issue("a", "On budgets", "<p>cycle detection in passing</p>", None),
                issue("b", "Cycle detection", "<p>how to detect a cycle</p>", None),
                issue("c", "Cycles", "<p>nothing about the other word</p>", None),
                issue("d", "Paid", "<p>free part</p>", Some("<p>the paid part: cycle detection</p>")),
            ],
            10,
        );
        let slugs: Vec<&str> = found.iter().map(|(issue, _)| issue.slug.as_str()).collect();
        assert_eq!(slugs, ["b", "a", "d"]);
        assert!(found[2].1.contains("paid part: cycle detection"), "{}", found[2].1);
    }

    #[test]
    fn empty_or_long_queries_are_refused() {
        assert!(query_words(" ,; ").is_err());
        assert!(query_words(&"word ".repeat(50)).is_err());
    }
}
