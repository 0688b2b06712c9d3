//! Golden outputs: the canonical print of every `testdata/` kernel, one
//! insta snapshot each (CI fails on a stale or missing snapshot).

#[test]
fn canonical_print_of_testdata() {
    insta::glob!("../testdata", "*.kir", |path| {
        let text = std::fs::read_to_string(path).expect("read a testdata file");
        let stream = kiln::parser::parse(&text).unwrap_or_else(|ds| panic!("{}:\n{ds}", path.display()));
        insta::assert_snapshot!(stream.to_string());
    });
}
