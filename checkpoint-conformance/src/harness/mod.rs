//! The test harness a backend's integration tests share (the `harness` feature): where the
//! server under test comes from, the bad-input driver over every entry point, and a proxy that
//! black-holes connections.
//!
//! - [`server_url`]: the environment variable that names the server, else a server started for
//!   the run (a testcontainers container), else a failure that names the variable. A test
//!   never passes, or is skipped, for want of a server.
//! - [`bad_input::BadInput`]: arbitrary arguments through the trait's entry points and the
//!   backend's own ([`bad_input::MoreEntryPoints`]), invalid ones refused before any request,
//!   valid ones read back, counted on the wire by
//!   [`CountingProxy`](crate::round_trips::CountingProxy); [`bad_input::BadAdminInput`] the
//!   same over the operations API.
//! - [`BlackHoleProxy`]: a loopback TCP proxy that can stop relaying without closing anything
//!   (the peer vanished without a FIN), for tests that a store gives up a connection that
//!   stopped answering and works again once the network does; [`black_hole_and_back`] is the
//!   run every backend's fault tests make with it.
//! - [`lease_faults::black_holed_holder_stops_first`]: a lease holder cut off by the black hole
//!   stops treating its leases as held before another owner is granted them;
//!   [`bad_input::bad_lease_input`] refuses every invalid lease call before any I/O.
//! - [`Guarded`] (made by [`guarded`]): a store that keeps what it needs alive (a temporary
//!   directory, a server started for it) for as long as it is used, passing every call on: a
//!   [`Layered`](checkpoint_core::layer::Layered) store whose layer is the [`Guard`].
//! - [`RuntimeWorker`]: a worker's store under a run-time user beside an operator's, for the
//!   lease kit under least privilege (the operations API goes to the operator).
//!
//! The error-chain printer the tests' messages use is [`error_chain`](crate::error_chain).
//!
//! The feature adds no dependency: the testcontainers images stay in each backend's tests.

pub mod bad_input;
mod black_hole;
mod guarded;
pub mod lease_faults;
mod runtime_worker;
mod server;

pub use black_hole::{BlackHoleBounds, BlackHoleProxy, BlackHoleReport, black_hole_and_back};
pub use guarded::{Guard, Guarded, guarded};
pub use runtime_worker::RuntimeWorker;
pub use server::server_url;
