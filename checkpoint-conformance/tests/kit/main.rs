//! The kit's own tests: the reference store passes every case, deliberately broken stores are
//! caught, the history checker finds each kind of violation, the proxy counts right, the
//! black-hole proxy holds connections silent, and the bad-input driver passes a store that
//! validates first and catches one that does not. The source kit passes the reference sources
//! and catches each broken reader of a sequence log and of a Kafka log, whose log is shown
//! step by step.

mod bad_input;
mod black_hole;
mod broken;
mod broken_admin;
mod broken_leases;
mod broken_sources;
mod checker;
mod in_memory;
mod kafka_log;
mod lease_teeth;
mod messages;
mod proxy;
mod source_teeth;
mod sources;
mod teeth;
