const MAX_ATTEMPTS: u32 = 5;

/// Loops until done: `loop { if done { break } }` is what the docs say, not the code.
pub fn fix_until_green(agent: &mut Agent) -> Result<(), Error> {
    for attempt in 0..MAX_ATTEMPTS {
        agent.patch()?;
        match run_tests() {
            Ok(()) => return Ok(()),
            Err(e) => eprintln!("attempt {attempt}: {e}"),
        }
    }
    Err(Error::GaveUp)
}
