//! Any bytes, language left to detection: the audit must not panic, and the
//! JSON and SARIF renderers must accept whatever it returns.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let source = String::from_utf8_lossy(data);
    let report = auditor::Report::from(auditor::audit(&source, None, None));
    assert!(serde_json::to_string(&report).is_ok());
    let _ = auditor::render_sarif(&report);
});
