//! The DynamoDB client, from the usual AWS environment.
//!
//! `aws-config`'s default chain, as every AWS tool reads it: the region from `AWS_REGION` (or
//! the profile), the endpoint from `AWS_ENDPOINT_URL_DYNAMODB` or `AWS_ENDPOINT_URL` (for a
//! local emulator; none for AWS itself), credentials from the environment, the profile, web
//! identity, the container or the instance. Nothing of it is ever printed.

use aws_config::BehaviorVersion;
use aws_sdk_dynamodb::Client;
use checkpoint_core::{Argument, Error, InvalidInput, InvalidReason};

/// A client configured from the environment.
///
/// # Errors
///
/// Invalid input naming the region when no region is configured: the SDK would otherwise fail
/// every request with a less helpful message.
pub async fn client() -> Result<Client, Error> {
    let config = aws_config::defaults(BehaviorVersion::latest()).load().await;
    if config.region().is_none() {
        return Err(InvalidInput::new(
            Argument::Setting("region"),
            InvalidReason::Malformed {
                expected: "a region: set AWS_REGION (or a region in the AWS profile)",
            },
        )
        .into());
    }
    Ok(Client::new(&config))
}
