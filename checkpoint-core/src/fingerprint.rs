//! The fingerprint of a subscription's query, stored with an exclusive checkpoint.

use std::fmt;

/// A SHA-256 digest identifying a subscription's query.
///
/// Exclusive checkpoints store it on their first claim and refuse a later claim under a
/// different one (see [`Error::QueryChanged`](crate::Error::QueryChanged)). It prints as 64
/// lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fingerprint([u8; 32]);

impl Fingerprint {
    /// The number of bytes of a fingerprint.
    pub const LEN: usize = 32;

    /// A fingerprint from its 32 bytes.
    pub const fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// Its 32 bytes.
    pub const fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// A fingerprint from a slice, as a backend reads it back; `None` unless it is 32 bytes.
    pub fn from_slice(bytes: &[u8]) -> Option<Self> {
        <[u8; 32]>::try_from(bytes).ok().map(Self)
    }

    /// Its 64 lowercase hex digits.
    pub fn to_hex(&self) -> String {
        self.to_string()
    }

    /// A fingerprint from 64 hex digits (either case); `None` for anything else.
    pub fn from_hex(hex: &str) -> Option<Self> {
        if hex.len() != 64 || !hex.is_ascii() {
            return None;
        }
        let mut bytes = [0u8; 32];
        for (byte, pair) in bytes.iter_mut().zip(hex.as_bytes().chunks_exact(2)) {
            let digits = std::str::from_utf8(pair).ok()?;
            *byte = u8::from_str_radix(digits, 16).ok()?;
        }
        Some(Self(bytes))
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|byte| write!(f, "{byte:02x}"))
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fingerprint({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip() {
        let mut bytes = [0u8; 32];
        bytes[0] = 0xab;
        bytes[31] = 0x01;
        let fingerprint = Fingerprint::from_bytes(bytes);
        let hex = fingerprint.to_hex();
        assert_eq!(hex.len(), 64);
        assert!(hex.starts_with("ab00"));
        assert!(hex.ends_with("01"));
        assert_eq!(Fingerprint::from_hex(&hex), Some(fingerprint));
        assert_eq!(
            Fingerprint::from_hex(&hex.to_uppercase()),
            Some(fingerprint)
        );
        assert_eq!(Fingerprint::from_hex("ab"), None);
        assert_eq!(Fingerprint::from_hex(&"zz".repeat(32)), None);
        assert_eq!(Fingerprint::from_slice(&bytes), Some(fingerprint));
        assert_eq!(Fingerprint::from_slice(&bytes[1..]), None);
    }
}
