//! The worker's integration tests: one binary (see the workspace's build notes).

mod backoff;
mod behaviour;
mod drain;
mod dynamodb;
mod exported;
mod forgotten;
mod growth;
mod late_not_held;
mod model;
mod network;
mod requests;
mod retired;
mod support;
