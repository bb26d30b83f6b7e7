//! Positions: a writing transaction's `xid8` and the entry's index within that transaction's
//! entries of the partition, packed into one `u64`.
//!
//! `position = xid8 << 20 | index`. Reads go in (`xid8`, sequence) order, and within one
//! transaction the index counts that transaction's entries of the partition in sequence order
//! from 0, so the packed positions increase strictly in read order. They are stable: a
//! transaction's entries are fixed once it has committed, and an entry is read only after
//! that (see the crate doc).

use checkpoint_core::source::SourceError;

/// Bits of the index within a transaction: at most 2^20 (1,048,576) entries per transaction
/// and partition.
pub const INDEX_BITS: u32 = 20;

/// How many entries one transaction may write to one partition: 2^20.
pub const MAX_ENTRIES_PER_TRANSACTION: u64 = 1 << INDEX_BITS;

/// The SQLSTATE with which the `{table}_limit` trigger (installed by
/// [`migrate`](crate::PostgresSource::migrate)) refuses an `INSERT` or `COPY` that takes a
/// transaction past [`MAX_ENTRIES_PER_TRANSACTION`] entries in one partition, whoever writes:
/// `LM001` (class `LM` is not used by PostgreSQL). [`append`](crate::PostgresSource::append)
/// and [`append_in`](crate::PostgresSource::append_in) return it as
/// [`SourceError::Setup`] with the server's message; an application that writes with plain SQL
/// sees it as this code.
pub const TOO_MANY_ENTRIES_SQLSTATE: &str = "LM001";

/// The highest transaction id (`xid8`) whose entries can be positioned: 2^43 - 2, so that the
/// highest position stays below `i64::MAX` (the position after it must still be a checkpoint).
pub const MAX_TRANSACTION_ID: u64 = (1 << (63 - INDEX_BITS)) - 2;

const INDEX_MASK: u64 = MAX_ENTRIES_PER_TRANSACTION - 1;

/// The position of the `index`th entry (from 0) that transaction `xid` wrote to a partition.
pub fn encode(xid: u64, index: u64) -> Result<u64, SourceError> {
    if xid > MAX_TRANSACTION_ID {
        return Err(SourceError::Setup {
            backend: crate::BACKEND,
            message: format!(
                "transaction id {xid} is above {MAX_TRANSACTION_ID}, the highest this source \
                 can give a position (2^43 - 2): move the log to a new table (new positions)"
            ),
        });
    }
    if index >= MAX_ENTRIES_PER_TRANSACTION {
        return Err(SourceError::Setup {
            backend: crate::BACKEND,
            message: format!(
                "transaction {xid} wrote more than {MAX_ENTRIES_PER_TRANSACTION} entries to one \
                 partition, more than a position can number: split such writes into smaller \
                 transactions"
            ),
        });
    }
    Ok(xid << INDEX_BITS | index)
}

/// The transaction id and index a read from `position` starts at (`from` may be any
/// checkpoint, not only an entry's position).
pub fn decode(position: u64) -> (u64, u64) {
    (position >> INDEX_BITS, position & INDEX_MASK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_follow_transaction_then_index_order() {
        let a = encode(7, MAX_ENTRIES_PER_TRANSACTION - 1).unwrap();
        let b = encode(8, 0).unwrap();
        assert!(a < b);
        assert_eq!(
            a + 1,
            b,
            "the position after a full transaction is the next one's first"
        );
        assert_eq!(decode(b), (8, 0));
        assert_eq!(decode(a), (7, MAX_ENTRIES_PER_TRANSACTION - 1));
    }

    #[test]
    fn the_highest_position_leaves_room_for_its_checkpoint() {
        let highest = encode(MAX_TRANSACTION_ID, MAX_ENTRIES_PER_TRANSACTION - 1).unwrap();
        assert!(SourceError::check_position(highest).is_ok());
        assert!(SourceError::check_from(highest + 1).is_ok());
        assert!(encode(MAX_TRANSACTION_ID + 1, 0).is_err());
        assert!(encode(1, MAX_ENTRIES_PER_TRANSACTION).is_err());
    }
}
