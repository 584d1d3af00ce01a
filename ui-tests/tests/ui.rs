//! The compile-time half of the API's guarantees: every case in `ui/fail` must be
//! rejected with exactly the diagnostics in its `.stderr` (the messages are part of the
//! product), and every case in `ui/pass` must compile and run to success.
//!
//! After an intended change of a message, regenerate with
//! `TRYBUILD=overwrite cargo test -p ui-tests --test ui` and read every changed `.stderr`.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("ui/fail/*.rs");
    cases.pass("ui/pass/*.rs");
}
