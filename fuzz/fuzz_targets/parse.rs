//! Any bytes: the parser and the verifier never panic, and whatever parses
//! round-trips through the printer (`parse(print(m)) == m`, printing is
//! idempotent).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(stream) = kiln::parser::parse(&text) {
        let _ = kiln::verifier::verify(&stream);
        let printed = stream.to_string();
        let again = kiln::parser::parse(&printed).expect("printed form parses");
        assert!(again == stream, "parse(print(m)) != m");
        assert_eq!(again.to_string(), printed, "printing is idempotent");
    }
});
