//! `fixedpoint issues import DIR`: every `*.md` in DIR (not recursive),
//! each checked on its own. A bad file is reported with its line and none of
//! it is stored; the good ones still go in. Two files claiming one slug are
//! both refused, since either could be the one meant.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::format::{parse_issue, ParsedIssue};
use super::{NewsletterError, StoredOutcome};
use crate::store::Store;

/// How one file fared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileResult {
    Stored { slug: String, tier: &'static str, outcome: StoredOutcome },
    Refused { line: usize, message: String },
}

/// The whole import: every file with its result, in file-name order.
#[derive(Debug, Clone, Default)]
pub struct ImportReport {
    pub files: Vec<(PathBuf, FileResult)>,
}

impl ImportReport {
    pub fn all_stored(&self) -> bool {
        self.files.iter().all(|(_, result)| matches!(result, FileResult::Stored { .. }))
    }

    pub fn refused(&self) -> usize {
        self.files.iter().filter(|(_, result)| matches!(result, FileResult::Refused { .. })).count()
    }

    /// One line per file: `ok  001.md  slug (tier, new)` or
    /// `error  002.md:5: message`.
    pub fn write(&self, out: &mut impl Write, err: &mut impl Write) -> std::io::Result<()> {
        for (path, result) in &self.files {
            let name = path.display();
            match result {
                FileResult::Stored { slug, tier, outcome } => {
                    writeln!(out, "ok     {name}  {slug} ({tier}, {})", outcome.as_str())?
                }
                FileResult::Refused { line, message } => writeln!(err, "error  {name}:{line}: {message}")?,
            }
        }
        let stored = self.files.len() - self.refused();
        writeln!(out, "{stored} of {} issue files imported", self.files.len())
    }
}

/// Imports every `*.md` file of `dir`.
pub async fn import_dir(store: &Store, dir: &Path) -> Result<ImportReport, NewsletterError> {
    let entries = std::fs::read_dir(dir).map_err(|error| {
        NewsletterError::Invalid(format!("{}: cannot read the directory: {error}", dir.display()))
    })?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md") && path.is_file())
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(NewsletterError::Invalid(format!("{}: no *.md issue files here", dir.display())));
    }

    let mut parsed: Vec<(PathBuf, Result<ParsedIssue, FileResult>)> = paths
        .into_iter()
        .map(|path| {
            let too_big =
                std::fs::metadata(&path).is_ok_and(|meta| meta.len() > super::format::MAX_ISSUE_BYTES as u64);
            let result = match if too_big {
                Err(std::io::Error::other("larger than 1 MiB"))
            } else {
                std::fs::read(&path)
            } {
                Ok(bytes) => parse_issue(&bytes)
                    .map_err(|problem| FileResult::Refused { line: problem.line, message: problem.message }),
                Err(error) => {
                    Err(FileResult::Refused { line: 1, message: format!("cannot read the file: {error}") })
                }
            };
            (path, result)
        })
        .collect();

    // Slugs claimed by more than one file in this import.
    let mut owners: HashMap<String, Vec<PathBuf>> = HashMap::new();
    for (path, result) in &parsed {
        if let Ok(issue) = result {
            owners.entry(issue.slug.clone()).or_default().push(path.clone());
        }
    }
    for (path, result) in &mut parsed {
        let Ok(issue) = result else { continue };
        let Some(claimants) = owners.get(&issue.slug).filter(|claimants| claimants.len() > 1) else {
            continue;
        };
        let others: Vec<String> = claimants
            .iter()
            .filter(|other| *other != path)
            .map(|other| {
                other.file_name().map_or_else(String::new, |name| name.to_string_lossy().into_owned())
            })
            .collect();
        *result = Err(FileResult::Refused {
            line: issue.slug_line,
            message: format!("slug: `{}` is also the slug of {}", issue.slug, others.join(", ")),
        });
    }

    let mut report = ImportReport::default();
    for (path, result) in parsed {
        let result = match result {
            Ok(issue) => match store.store_issue(&issue).await {
                Ok(outcome) => FileResult::Stored { slug: issue.slug, tier: issue.tier.as_str(), outcome },
                Err(error) => {
                    tracing::error!(%error, path = %path.display(), "storing an issue failed");
                    FileResult::Refused { line: 1, message: format!("could not store it: {error}") }
                }
            },
            Err(refused) => refused,
        };
        report.files.push((path, result));
    }
    Ok(report)
}
