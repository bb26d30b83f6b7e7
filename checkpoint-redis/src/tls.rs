//! TLS through rustls: the `tls-rustls` feature.

/// Makes sure rustls has a process-wide crypto provider before redis-rs builds a TLS
/// configuration.
///
/// rustls picks its provider from its own cargo features, and panics when it finds none or
/// several (another crate of the application may enable a second one). This installs
/// aws-lc-rs's provider, which this feature enables, only when the application has installed
/// none; one the application installed is kept.
pub(crate) fn ensure_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // An error means another thread installed one in the meantime: that one is used.
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    }
}
