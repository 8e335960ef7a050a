fn main() {
    let rx = subscribe();
    // loop until max_turns: not implemented
    loop {
        let event = rx.recv().unwrap_or_default();
        let _note = "break when done";
        process(event);
    }
}
