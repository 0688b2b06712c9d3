//! Any bytes as a `kiln.toml` (the user's or the cache's): the config
//! reader never panics; it either applies known settings or names the file
//! in its error, as bad input rather than bad usage.
#![no_main]

use kiln::settings::{apply_file, Settings, TABLE};
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let path = Path::new("fuzz/kiln.toml");
    for cache_file in [false, true] {
        let mut s = Settings::defaults();
        match apply_file(&mut s, path, &text, cache_file) {
            Ok(()) => assert_eq!(s.rows().len(), TABLE.len()),
            Err(e) => {
                assert!(e.location.starts_with("fuzz/kiln.toml"), "{e}");
                assert!(!e.usage, "a file's error is never a usage error");
            }
        }
    }
});
