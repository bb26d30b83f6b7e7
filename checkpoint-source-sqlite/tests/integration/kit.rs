//! The source kit over this source: every clause of the source contract, one test each, on a
//! fresh database file per test.

mod source {
    checkpoint_conformance::source_tests!(crate::support::log);
}
