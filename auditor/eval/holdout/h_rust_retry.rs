use std::time::{Duration, Instant};

pub fn wait_ready(probe: impl Fn() -> bool) -> bool {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(120) {
        if probe() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    false
}
