//! Counting round trips on the wire, so a test can assert them instead of assuming them.

/// The kit's [`Proxy`](crate::proxy::Proxy), used to count request→response exchanges between
/// its clients and one upstream server (see there for what counts as one).
///
/// ```no_run
/// # async fn example() -> std::io::Result<()> {
/// use checkpoint_conformance::round_trips::CountingProxy;
///
/// let proxy = CountingProxy::start("127.0.0.1:6379").await?;
/// // connect the client under test to proxy.local_addr(), warm it up, then:
/// proxy.reset();
/// // ... one store operation ...
/// assert_eq!(proxy.round_trips(), 1);
/// # Ok(()) }
/// ```
pub type CountingProxy = crate::proxy::Proxy;
