//! Integration tests of the Kafka source against a broker: `KAFKA_URL`
//! (`kafka://HOST:PORT[,HOST:PORT…]`; `scripts/services/kafka.sh up` starts one and prints it),
//! or, when it is unset, Apache Kafka in a container through testcontainers. A test fails when
//! it cannot reach the broker. Each test makes topics of its own under random names.
//!
//! One binary with modules keeps link time and disk down.

mod broker;
mod kit;
mod reads;
mod restart;
mod setup;
mod stress;
mod support;
