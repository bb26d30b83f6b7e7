//! The subscription's behaviour, on the in-memory store and source (one binary: see the
//! workspace's build notes).

mod exported;
mod failures;
mod growth;
mod handling;
mod lag;
mod model;
mod ownership;
mod support;
mod transaction_kill;
mod transactional;
