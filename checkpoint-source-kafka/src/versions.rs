//! Which versions of each request this crate speaks, and why.
//!
//! A connection asks the broker for its version ranges (ApiVersions) and each request is sent
//! at the highest version both sides speak within the crate's range. The ranges stop before
//! each API's "flexible" versions (KIP-482's tagged fields): they add nothing this source
//! uses, tansu 0.6 answers a version-12 fetch with a tagged field that version does not
//! define (the codec then refuses the response), and every broker from Kafka 2.x to 4.x
//! serves the ranges below (Kafka 4.0 removed only versions older than their starts).
//!
//! | request | versions | the first one gives |
//! | --- | --- | --- |
//! | Fetch | 4–11 | isolation level, last stable offset, aborted transactions |
//! | ListOffsets | 2–5 | isolation level: "latest" is the last stable offset |
//! | Metadata | 4–8 | `allow_auto_topic_creation = false` |
//! | Produce | 3–8 | record batches v2 |
//! | CreateTopics | 2–4 | |
