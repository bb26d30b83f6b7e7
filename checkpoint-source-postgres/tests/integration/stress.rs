//! The commit-order stress test (placeholder, written next).
