//! Any bytes, read as Go: the audit must return a full report and never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let source = String::from_utf8_lossy(data);
    let report = auditor::audit(&source, None, Some(auditor::Language::Go));
    assert_eq!(report.exits.len(), 8);
    let _ = auditor::render_text(&auditor::Report::from(report));
});
