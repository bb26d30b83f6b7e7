//! One TCP connection to one broker: requests framed as the protocol says, one at a time, and
//! the API versions this broker and this crate both speak.

use std::collections::HashMap;
use std::ops::RangeInclusive;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, RequestHeader, ResponseHeader,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::error::{WireError, codec, server};

/// The largest response this crate accepts: a read asks for at most
/// [`KafkaSourceConfig::with_max_bytes`](crate::KafkaSourceConfig::with_max_bytes) (64 MiB at
/// most), a broker may exceed it by one batch. Anything larger is not a Kafka response.
const MAX_FRAME: usize = 256 << 20;

/// The client id brokers see in their logs and quotas.
const CLIENT_ID: &str = "checkpoint-source-kafka";

/// A connection, with the versions negotiated on it.
#[derive(Debug)]
pub(crate) struct Connection {
    stream: TcpStream,
    correlation: i32,
    versions: HashMap<i16, RangeInclusive<i16>>,
}

impl Connection {
    /// Connects to `address` (`host:port`) and asks the broker which API versions it speaks.
    pub(crate) async fn open(address: &str) -> Result<Self, WireError> {
        let stream = TcpStream::connect(address).await?;
        stream.set_nodelay(true)?;
        let mut connection = Self {
            stream,
            correlation: 0,
            versions: HashMap::new(),
        };
        // Version 0 is the one every broker answers (later ones add client names only).
        let answer: ApiVersionsResponse = connection
            .exchange(&ApiVersionsRequest::default(), 0)
            .await?;
        server("ApiVersions", answer.error_code)?;
        connection.versions = answer
            .api_keys
            .iter()
            .map(|api| (api.api_key, api.min_version..=api.max_version))
            .collect();
        Ok(connection)
    }

    /// The highest version of `R` within `ours` that this broker speaks.
    pub(crate) fn version<R: Request>(&self, ours: RangeInclusive<i16>) -> Result<i16, WireError> {
        // Named only for an error: every request passes here.
        let name = || {
            ApiKey::try_from(R::KEY)
                .map_or_else(|_| format!("API {}", R::KEY), |key| format!("{key:?}"))
        };
        let theirs = self.versions.get(&R::KEY).ok_or_else(|| {
            WireError::Protocol(format!("the broker does not serve {} at all", name()))
        })?;
        let highest = (*ours.end()).min(*theirs.end());
        let lowest = (*ours.start()).max(*theirs.start());
        if highest < lowest {
            return Err(WireError::Protocol(format!(
                "the broker serves {} versions {theirs:?}, this source speaks {ours:?}",
                name()
            )));
        }
        Ok(highest)
    }

    /// Sends `request` at the highest common version within `ours` and reads its response.
    pub(crate) async fn send<R: Request>(
        &mut self,
        request: &R,
        ours: RangeInclusive<i16>,
    ) -> Result<(R::Response, i16), WireError> {
        let version = self.version::<R>(ours)?;
        Ok((self.exchange(request, version).await?, version))
    }

    /// One request and its response, at `version`.
    async fn exchange<R: Request>(
        &mut self,
        request: &R,
        version: i16,
    ) -> Result<R::Response, WireError> {
        self.correlation = self.correlation.wrapping_add(1);
        let correlation = self.correlation;
        let frame = encode(request, version, correlation)?;
        self.stream.write_all(&frame).await?;
        let mut body = self.read_frame().await?;
        let header = ResponseHeader::decode(&mut body, R::Response::header_version(version))
            .map_err(codec)?;
        if header.correlation_id != correlation {
            return Err(WireError::Protocol(format!(
                "the broker answered request {} when request {correlation} was the only one sent",
                header.correlation_id
            )));
        }
        R::Response::decode(&mut body, version).map_err(codec)
    }

    async fn read_frame(&mut self) -> Result<Bytes, WireError> {
        let length = self.stream.read_i32().await?;
        let length = usize::try_from(length)
            .ok()
            .filter(|length| *length <= MAX_FRAME)
            .ok_or_else(|| WireError::Protocol(format!("a response of {length} bytes")))?;
        let mut body = vec![0; length];
        self.stream.read_exact(&mut body).await?;
        Ok(Bytes::from(body))
    }
}

/// The request as a frame: its length, its header, its body.
fn encode<R: Request>(request: &R, version: i16, correlation: i32) -> Result<BytesMut, WireError> {
    let header = RequestHeader::default()
        .with_request_api_key(R::KEY)
        .with_request_api_version(version)
        .with_correlation_id(correlation)
        .with_client_id(Some(StrBytes::from_static_str(CLIENT_ID)));
    let mut frame = BytesMut::new();
    frame.put_i32(0);
    header
        .encode(&mut frame, R::header_version(version))
        .map_err(codec)?;
    request.encode(&mut frame, version).map_err(codec)?;
    let length = i32::try_from(frame.len() - 4)
        .map_err(|_| WireError::Protocol("a request larger than 2 GiB".into()))?;
    frame[..4].copy_from_slice(&length.to_be_bytes());
    Ok(frame)
}
