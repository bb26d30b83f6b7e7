//! Ordering by key: entries of one key never run at the same time, and run in log order.

use std::collections::HashMap;

use futures_util::FutureExt;
use futures_util::future::Shared;
use tokio::sync::oneshot;

/// Resolves when the previous entry of the same key is finished: `Ok` when it was handled or
/// parked, `Err` when it never will be (the partition stopped on it, or it was abandoned).
pub(crate) type Previous = Shared<oneshot::Receiver<()>>;

/// Above this many keys remembered, the finished ones are forgotten.
const KEYS_BEFORE_PRUNING: usize = 1024;

/// The last entry dispatched of each key, in the reader.
#[derive(Debug, Default)]
pub(crate) struct KeyOrder {
    last: HashMap<String, Previous>,
}

impl KeyOrder {
    /// For the next entry of `key`: what it waits for before it runs, and what it sends when
    /// it is finished (dropping the sender unsent tells the next one it never will be).
    pub(crate) fn chain(&mut self, key: &str) -> (Option<Previous>, oneshot::Sender<()>) {
        let (finished, next) = oneshot::channel();
        let previous = self.last.insert(key.to_owned(), next.shared());
        if self.last.len() > KEYS_BEFORE_PRUNING {
            self.last.retain(|_, last| last.peek().is_none());
        }
        (previous, finished)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_next_entry_of_a_key_waits_for_the_previous_and_other_keys_do_not() {
        let mut order = KeyOrder::default();
        let (none, first) = order.chain("a");
        assert!(none.is_none());
        let (after_first, _second) = order.chain("a");
        let (other, _) = order.chain("b");
        assert!(other.is_none(), "another key waits for nothing");
        let after_first = after_first.expect("the second entry of a key waits");
        assert!(after_first.peek().is_none());
        first.send(()).expect("the receiver is kept");
        assert_eq!(after_first.await, Ok(()));
    }

    #[tokio::test]
    async fn an_entry_that_is_never_finished_says_so_to_the_next() {
        let mut order = KeyOrder::default();
        let (_, first) = order.chain("a");
        let (after_first, _) = order.chain("a");
        drop(first);
        assert!(after_first.expect("chained").await.is_err());
    }

    #[tokio::test]
    async fn finished_keys_are_forgotten() {
        let mut order = KeyOrder::default();
        for key in 0..=KEYS_BEFORE_PRUNING {
            let (_, finished) = order.chain(&key.to_string());
            finished.send(()).expect("kept");
        }
        let (_, _) = order.chain("last");
        // Pruning looks at entries whose receivers were polled or completed: the finished
        // ones are gone once their senders have sent.
        assert!(order.last.len() <= KEYS_BEFORE_PRUNING + 2);
    }
}
