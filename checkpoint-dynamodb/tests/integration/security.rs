//! Secrets never show: not in the store's `Debug` output, not in the errors of failed calls.

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use checkpoint_conformance::{error_chain, fresh_group};
use checkpoint_core::CheckpointStore;
use checkpoint_dynamodb::DynamoDbCheckpointStore;

use crate::support::own_moto::free_port;
use crate::support::{TABLE, client_for, endpoint};

const ACCESS_KEY: &str = "AKIDEXAMPLE";
const SECRET_KEY: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
const SESSION_TOKEN: &str = "session-token-FwoGZXIvYXdzEXAMPLE";

fn client_with_secrets(endpoint: &str) -> Client {
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new(
            ACCESS_KEY,
            SECRET_KEY,
            Some(SESSION_TOKEN.to_owned()),
            None,
            "static",
        ))
        .retry_config(RetryConfig::disabled())
        .build();
    Client::from_conf(config)
}

fn assert_no_secret(what: &str, text: &str) {
    assert!(
        !text.contains(SECRET_KEY),
        "{what} shows the secret key: {text}"
    );
    assert!(
        !text.contains(SESSION_TOKEN),
        "{what} shows the session token: {text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debug_output_and_errors_never_show_the_secret_key_or_session_token() {
    let store = DynamoDbCheckpointStore::new(client_with_secrets(&endpoint()))
        .with_table(&format!("missing-{}", fresh_group("table")))
        .expect("a valid table name");
    let debug = format!("{store:?}");
    assert!(debug.contains("missing-"), "the table is shown: {debug}");
    assert_no_secret("the store's Debug", &debug);
    assert_no_secret("the store's pretty Debug", &format!("{store:#?}"));

    // A failed call the server answered (the table does not exist): its whole chain, in
    // Display and Debug form. The request was signed with the secret; nothing of it comes back.
    let error = store.load("g", "s", 0).await.expect_err("a missing table");
    let chain = error_chain(&error);
    assert!(chain.contains("ResourceNotFound"), "{chain}");
    assert_no_secret("a service error's chain", &chain);
    assert_no_secret("a service error's Debug", &format!("{error:?}"));
    assert_no_secret("a service error's Display", &error.to_string());

    // A failed call nothing answered.
    let unreachable = DynamoDbCheckpointStore::new(client_with_secrets(&format!(
        "http://127.0.0.1:{}",
        free_port()
    )));
    let error = unreachable
        .save("g", "s", 0, 1)
        .await
        .expect_err("nothing listens");
    assert_no_secret("a dispatch error's chain", &error_chain(&error));
    assert_no_secret("a dispatch error's Debug", &format!("{error:?}"));

    // The SDK's own configuration, as an application might log it: the credentials provider
    // redacts its secret too (the store leaves the client out of its Debug regardless).
    assert_no_secret(
        "the client configuration's Debug",
        &format!("{:?}", store.client().config()),
    );
}

/// An `https://` endpoint is spoken to in TLS by the SDK's default HTTPS client (rustls): the
/// first bytes a listener receives are a TLS handshake record, not an HTTP request, and the
/// failed handshake is a backend error that names no secret.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_endpoint_is_spoken_to_in_tls() {
    use tokio::io::AsyncReadExt;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("local address");
    let first_bytes = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.expect("accept");
        let mut bytes = [0_u8; 3];
        socket.read_exact(&mut bytes).await.expect("read");
        // Closing without an answer fails the handshake.
        bytes
    });
    let store = DynamoDbCheckpointStore::new(client_with_secrets(&format!("https://{address}")));
    let error = store.load("g", "s", 0).await.expect_err("no TLS server");
    let bytes = first_bytes.await.expect("the listener task");
    // 0x16: a handshake record; 0x03 0x01..0x03: the record-layer version of a ClientHello.
    assert_eq!(bytes[0], 0x16, "not a TLS handshake: {bytes:?}");
    assert_eq!(bytes[1], 0x03, "not a TLS record version: {bytes:?}");
    assert!(
        matches!(error, checkpoint_core::Error::Backend { .. }),
        "{error:?}"
    );
    assert_no_secret("a TLS failure's chain", &error_chain(&error));
    eprintln!(
        "https endpoint without a TLS server: {}",
        error_chain(&error)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debug_output_shows_no_client_configuration() {
    let store = DynamoDbCheckpointStore::new(client_for(&endpoint()))
        .with_table(TABLE)
        .unwrap();
    let debug = format!("{store:?}");
    assert!(debug.contains(TABLE));
    assert!(
        !debug.contains("test"),
        "no credentials or endpoint details: {debug}"
    );
}
