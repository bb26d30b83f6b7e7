//! The test harness a backend's integration tests share (the `harness` feature): where the
//! server under test comes from, and the bad-input driver over every entry point.
//!
//! - [`server_url`]: the environment variable that names the server, else a server started for
//!   the run (a testcontainers container), else a failure that names the variable. A test
//!   never passes, or is skipped, for want of a server.
//! - [`bad_input::BadInput`]: arbitrary arguments through the trait's entry points and the
//!   backend's own ([`bad_input::MoreEntryPoints`]), invalid ones refused before any request,
//!   valid ones read back, counted on the wire by
//!   [`CountingProxy`](crate::round_trips::CountingProxy).
//!
//! The error-chain printer the tests' messages use is [`error_chain`](crate::error_chain).
//!
//! The feature adds no dependency: the testcontainers images stay in each backend's tests.

pub mod bad_input;
mod server;

pub use server::server_url;
