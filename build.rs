//! Generates the KIR parser from `src/grammar.lalrpop` (lalrpop).
fn main() {
    lalrpop::Configuration::new()
        .set_in_dir("src")
        .emit_rerun_directives(true)
        .process()
        .expect("lalrpop grammar failed to generate");
}
