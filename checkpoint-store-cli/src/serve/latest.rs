//! The report the refresh loop published last, shared with every connection.

use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;

use super::prometheus;
use crate::monitor::Report;

/// One report, rendered once for every request until the next refresh: the JSON of
/// `/api/fleet` and the text of `/metrics`.
#[derive(Debug, Clone, Default)]
pub struct Rendered {
    /// The report as JSON.
    pub json: Bytes,
    /// The report as Prometheus text.
    pub metrics: Bytes,
}

impl Rendered {
    /// `report`, rendered.
    pub fn of(report: &Report) -> Self {
        let json = match serde_json::to_vec(report) {
            Ok(json) => json,
            // Not expected (the report is plain data, non-finite numbers become null), but
            // a page that says why beats a connection closed without an answer.
            Err(error) => {
                serde_json::json!({ "error": format!("cannot write the report: {error}") })
                    .to_string()
                    .into_bytes()
            }
        };
        Self {
            json: Bytes::from(json),
            metrics: Bytes::from(prometheus::render(report)),
        }
    }
}

/// The latest [`Rendered`] report: the refresh loop publishes, connections read. Cloning it
/// shares it.
#[derive(Debug, Clone, Default)]
pub struct Latest(Arc<Mutex<Arc<Rendered>>>);

impl Latest {
    /// Shared by every clone from now on, in place of the one before.
    pub fn publish(&self, report: &Report) {
        // Rendered before taking the lock: readers wait for a pointer swap only.
        let rendered = Arc::new(Rendered::of(report));
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = rendered;
    }

    /// The report published last (empty before the first).
    pub fn get(&self) -> Arc<Rendered> {
        // A panic elsewhere while holding the lock cannot leave a half-written pointer.
        Arc::clone(&self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}
