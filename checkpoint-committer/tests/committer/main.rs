//! The committer's tests, in one binary: its promises against a model, its behaviour through
//! the public API, and runs killed with SIGKILL on real stores.

mod behaviour;
mod crash;
mod exported;
mod model;
mod recording;
