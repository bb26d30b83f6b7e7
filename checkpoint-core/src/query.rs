//! The query a subscription reads with, and its [`Fingerprint`].
//!
//! # The fingerprint, byte for byte
//!
//! A fingerprint is stored with an exclusive checkpoint, so its encoding can never change. It
//! is the SHA-256 digest of this canonical encoding, where `u32` is 4 bytes big-endian and a
//! *string list* is a `u32` count followed by each string as a `u32` byte length and its UTF-8
//! bytes:
//!
//! 1. the 20 bytes `checkpoint-query-v1` followed by one `0x00` byte;
//! 2. for "no query" (`None`): the single byte `0x00`, and nothing else;
//! 3. for a query: the byte `0x01`, a `u32` count of distinct items, then each distinct item's
//!    encoding in ascending byte order of the encodings;
//! 4. an item's encoding: its event types as a string list, then its tags as a string list,
//!    each list sorted ascending by bytes with duplicates removed.
//!
//! So the order in which items, types and tags are written, and repeats of them, never change
//! the fingerprint; anything else does. Types are compared exactly as given (no case folding,
//! no Unicode normalisation): `"OrderPlaced"` and `"orderplaced"` are different queries.
//! Items are a disjunction, so an empty query (`Some` with no items) and no query (`None`) are
//! different too.

use sha2::{Digest, Sha256};

use crate::Fingerprint;

/// The domain tag that starts every encoding; a new encoding would take a new tag.
const DOMAIN: &[u8] = b"checkpoint-query-v1\0";

/// What a subscription reads: events matching any of its items.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    /// The items; an event matches the query when it matches any item.
    pub items: Vec<QueryItem>,
}

/// One item of a [`Query`]: events of any of `types` carrying all of `tags`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueryItem {
    /// Event types, compared exactly as given.
    pub types: Vec<String>,
    /// Tags.
    pub tags: Vec<String>,
}

impl Query {
    /// A query of `items`.
    pub fn new(items: impl IntoIterator<Item = QueryItem>) -> Self {
        Self {
            items: items.into_iter().collect(),
        }
    }
}

impl QueryItem {
    /// An item matching events of any of `types` that carry every one of `tags`.
    pub fn new<T: Into<String>, G: Into<String>>(
        types: impl IntoIterator<Item = T>,
        tags: impl IntoIterator<Item = G>,
    ) -> Self {
        Self {
            types: types.into_iter().map(Into::into).collect(),
            tags: tags.into_iter().map(Into::into).collect(),
        }
    }

    fn canonical_encoding(&self) -> Vec<u8> {
        let mut encoding = Vec::new();
        push_string_set(&mut encoding, &self.types);
        push_string_set(&mut encoding, &self.tags);
        encoding
    }
}

fn push_u32(out: &mut Vec<u8>, value: usize) {
    // Queries are small; a count or length beyond u32 cannot come from a real query, and
    // saturating keeps the function total instead of panicking.
    out.extend_from_slice(&u32::try_from(value).unwrap_or(u32::MAX).to_be_bytes());
}

fn push_string_set(out: &mut Vec<u8>, strings: &[String]) {
    let mut sorted: Vec<&[u8]> = strings.iter().map(String::as_bytes).collect();
    sorted.sort_unstable();
    sorted.dedup();
    push_u32(out, sorted.len());
    for string in sorted {
        push_u32(out, string.len());
        out.extend_from_slice(string);
    }
}

/// The canonical encoding of `query` that [`fingerprint`] digests (see the module doc).
pub fn canonical_encoding(query: Option<&Query>) -> Vec<u8> {
    let mut encoding = DOMAIN.to_vec();
    match query {
        None => encoding.push(0x00),
        Some(query) => {
            encoding.push(0x01);
            let mut items: Vec<Vec<u8>> = query
                .items
                .iter()
                .map(QueryItem::canonical_encoding)
                .collect();
            items.sort_unstable();
            items.dedup();
            push_u32(&mut encoding, items.len());
            for item in items {
                encoding.extend_from_slice(&item);
            }
        }
    }
    encoding
}

/// The fingerprint of a subscription's query (`None` for a subscription without one).
///
/// ```
/// use checkpoint_core::{Query, QueryItem, fingerprint};
///
/// let written_one_way = Query::new([
///     QueryItem::new(["OrderPlaced", "OrderPaid"], ["tenant:7"]),
///     QueryItem::new(["RefundIssued"], Vec::<String>::new()),
/// ]);
/// let written_another = Query::new([
///     QueryItem::new(["RefundIssued"], Vec::<String>::new()),
///     QueryItem::new(["OrderPaid", "OrderPlaced"], ["tenant:7"]),
/// ]);
/// assert_eq!(fingerprint(Some(&written_one_way)), fingerprint(Some(&written_another)));
/// assert_ne!(fingerprint(Some(&written_one_way)), fingerprint(None));
/// ```
pub fn fingerprint(query: Option<&Query>) -> Fingerprint {
    Fingerprint::from_bytes(Sha256::digest(canonical_encoding(query)).into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(query: Option<&Query>) -> String {
        fingerprint(query).to_hex()
    }

    /// Golden vectors. They were computed from the encoding described in the module doc by an
    /// independent implementation (Python's hashlib); a change here breaks every stored
    /// exclusive checkpoint.
    #[test]
    fn golden_vectors() {
        assert_eq!(
            hex(None),
            "80587f6b4b1b22d698b9c466da1e8c9cae9d4c0a0ae0fc2e96389178fdf0ce92"
        );
        assert_eq!(
            hex(Some(&Query::default())),
            "e39c8adca8d52976aa401399d910c81dba594571237a0a6580ec76d8df1391c6"
        );
        assert_eq!(
            hex(Some(&Query::new([QueryItem::new(
                ["OrderPlaced"],
                Vec::<String>::new()
            )]))),
            "e844d89d541fe2af4c8485c8b195256fcfca048fe5386b2cfd6e28377e11d3f5"
        );
        assert_eq!(
            hex(Some(&Query::new([
                QueryItem::new(["OrderPlaced", "OrderPaid"], ["tenant:7", "region:eu"]),
                QueryItem::new(["RefundIssued"], ["tenant:7"]),
            ]))),
            "b19120a530861208c6b13e0128da364527ddf4ef3dd67e0a98cf9eec6b4ba927"
        );
        assert_eq!(
            hex(Some(&Query::new([QueryItem::new(
                ["Ωμέγα", "😀"],
                ["a\u{0}b"]
            )]))),
            "d5c175994a06d940d533321093317a2f0d842f31907efb11188f60e2db6ed108"
        );
    }

    #[test]
    fn order_and_repeats_do_not_matter() {
        let a = Query::new([
            QueryItem::new(["B", "A", "A"], ["y", "x"]),
            QueryItem::new(["C"], ["z"]),
        ]);
        let b = Query::new([
            QueryItem::new(["C"], ["z"]),
            QueryItem::new(["A", "B"], ["x", "y", "x"]),
            QueryItem::new(["C"], ["z"]),
        ]);
        assert_eq!(fingerprint(Some(&a)), fingerprint(Some(&b)));
    }

    #[test]
    fn everything_else_matters() {
        let base = Query::new([QueryItem::new(["A"], ["t"])]);
        let variants = [
            Query::new([QueryItem::new(["a"], ["t"])]),
            Query::new([QueryItem::new(["A"], ["T"])]),
            Query::new([QueryItem::new(["A"], Vec::<String>::new())]),
            Query::new([QueryItem::new(["A", "B"], ["t"])]),
            Query::new([QueryItem::new(["A"], ["t"]), QueryItem::new(["B"], ["t"])]),
            // Moving a string from types to tags, or splitting it, is a different query.
            Query::new([QueryItem::new(Vec::<String>::new(), ["A", "t"])]),
            Query::new([QueryItem::new(["At"], Vec::<String>::new())]),
            Query::default(),
        ];
        for variant in &variants {
            assert_ne!(
                fingerprint(Some(&base)),
                fingerprint(Some(variant)),
                "{variant:?}"
            );
        }
        assert_ne!(fingerprint(Some(&base)), fingerprint(None));
    }
}
