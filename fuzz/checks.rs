//! What each fuzz target checks of one input. The cargo-fuzz targets
//! (`fuzz/fuzz_targets/`) and the corpus replay test (`tests/fuzz_corpus.rs`,
//! `make fuzz-smoke`) include this one file, so a kept input is replayed
//! through exactly the code the fuzzer ran. A check panics on a property
//! broken; the library must never panic on any input.

use kiln::cache::record;

/// Any bytes: the parser and the verifier never panic, and whatever
/// parses round-trips through the printer (`parse(print(m)) == m`,
/// printing is idempotent).
pub fn parse(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Ok(stream) = kiln::parser::parse(&text) {
        let _ = kiln::verifier::verify(&stream);
        let printed = stream.to_string();
        let again = kiln::parser::parse(&printed).expect("printed form parses");
        assert!(again.same_as(&stream), "parse(print(m)) != m");
        assert_eq!(again.to_string(), printed, "printing is idempotent");
    }
}

/// Any bytes, as a record file: decoding never panics, and agrees with
/// `peek` and with re-encoding. The bytes are decoded as they are and
/// again with a correct checksum put at their end, so the fuzzer gets past
/// the checksum to the lengths and the JSON.
pub fn record(data: &[u8]) {
    decode_one(data);
    if data.len() >= record::CHECKSUM_LEN {
        let mut fixed = data.to_vec();
        let body = fixed.len() - record::CHECKSUM_LEN;
        let sum = blake3::hash(&fixed[..body]);
        fixed[body..].copy_from_slice(sum.as_bytes());
        decode_one(&fixed);
    }
}

fn decode_one(bytes: &[u8]) {
    let Ok(r) = record::decode(bytes) else { return };
    let (h, meta, producer) = record::peek(bytes, bytes.len() as u64).expect("a decoded record peeks");
    assert_eq!((h.key, &meta, &producer), (r.key, &r.meta, &r.producer));
    let again = record::encode(&r.key, &r.meta, &r.producer, &r.object).expect("a decoded record encodes");
    assert_eq!(record::decode(&again).expect("re-encoded record decodes"), r);
}

/// Any bytes, as a `.npy` file: the header check never panics and runs in
/// one pass (libFuzzer's timeout catches a slow one); what it accepts, npyz
/// parses, and loading it into a field of the header's own type never
/// panics and succeeds exactly when the length is what the header says
/// (and, for `i1`, every byte is 0 or 1).
pub fn npy(data: &[u8]) {
    let Ok(h) = kiln::npy::header(data) else { return };
    assert!(h.data_start <= data.len() && h.data_start <= 12 + kiln::npy::MAX_HEADER_LEN);
    let Some(elem) = h.elem else { return };
    if h.data_len().is_none_or(|n| n > 1 << 20) {
        return;
    }
    let mut field = kiln::exec::FieldData { elem, shape: h.shape.clone(), bytes: Default::default() };
    let fits = h.data_len().map(|n| n + h.data_start as u64) == Some(data.len() as u64)
        // npyz refuses a bool byte other than 0 or 1 (found by the replay).
        && (elem != kiln::ir::Scalar::I1 || data[h.data_start..].iter().all(|&b| b <= 1));
    let loaded = field.load_npy("x", data);
    assert_eq!(loaded.is_ok(), fits, "{loaded:?}");
}

/// Any bytes as a `kiln.toml` (the user's or the cache's): the config
/// reader never panics; it either applies known settings or names the file
/// in its error, as bad input rather than bad usage.
pub fn config(data: &[u8]) {
    use kiln::settings::{apply_file, Settings, TABLE};
    let text = String::from_utf8_lossy(data);
    let path = std::path::Path::new("fuzz/kiln.toml");
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
}

/// The field table the `import` target's logs are read with: the fields
/// and kernels of `lit-tests/import/Inputs/basic.fields.json`, whose log the
/// seeds are cut from.
const IMPORT_TABLE: &str = r#"{"quadrants":"1.3.3","fields":[{"name":"x","dtype":"f32","shape":[16],"place":2,"ancestors":[1,0]},{"name":"y","dtype":"f32","shape":[16],"place":4,"ancestors":[3,0]},{"name":"g","dtype":"i32","shape":[4,8],"place":6,"ancestors":[5,0]},{"name":"total","dtype":"f32","shape":[],"place":8,"ancestors":[7,0]},{"name":"count","dtype":"i64","shape":[],"place":10,"ancestors":[9,0]}],"kernels":{"saxpy":{"args":[{"name":"a","kind":"scalar","dtype":"f32"},{"name":"n","kind":"scalar","dtype":"i32"}]},"fill2d":{"args":[{"name":"base","kind":"scalar","dtype":"i32"}]},"collatz":{"args":[{"name":"start","kind":"scalar","dtype":"i32"}]},"reduce":{"args":[{"name":"scale","kind":"scalar","dtype":"f32"}]},"nd":{"args":[{"name":"arr","kind":"ndarray","dtype":"f32","shape":[3,5]},{"name":"bias","kind":"scalar","dtype":"f32"}]}}}"#;

/// Any bytes, as a Quadrants log: `import::import` never panics (nor
/// overflows a stack), and what it imports verifies and round-trips
/// through the printer (it is KIR that any tool accepts, or an error).
pub fn import(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Ok(imported) = kiln::import::import(&text, IMPORT_TABLE, kiln::import::DEFAULT_STAGE) {
        kiln::verifier::verify(&imported.stream).expect("imported KIR verifies");
        let printed = imported.stream.to_string();
        let again = kiln::parser::parse(&printed).expect("imported KIR parses");
        assert!(again.same_as(&imported.stream), "parse(print(imported)) != imported");
    }
}
