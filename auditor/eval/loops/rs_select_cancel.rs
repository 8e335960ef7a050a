use std::collections::HashSet;

use tokio_util::sync::CancellationToken;

pub fn refine(token: &CancellationToken, mut state: State) -> State {
    let mut seen = HashSet::new();
    loop {
        if token.is_cancelled() {
            break;
        }
        let hash = digest(&state);
        if !seen.insert(hash) {
            break;
        }
        state = improve(state);
    }
    state
}
