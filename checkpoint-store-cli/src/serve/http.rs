//! The routes, and the connections that serve them: HTTP/1 with hyper, every answer from the
//! report published last ([`Latest`]), never from the store.

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{ALLOW, CACHE_CONTROL, CONTENT_TYPE, HeaderName, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};

use super::latest::{Latest, Rendered};
use super::page::PAGE;

/// `/metrics`' content type: the text exposition format 0.0.4.
pub const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The page may run its own inline script and style and read the report from this server,
/// nothing else: no script or style from elsewhere could run even if one got in.
const PAGE_POLICY: &str = "default-src 'none'; script-src 'unsafe-inline'; \
     style-src 'unsafe-inline'; connect-src 'self'; img-src data:; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

/// How long a client may take to send a request's headers before its connection is closed:
/// a client that connects and sends nothing does not hold a connection forever.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// How long to wait before accepting again after the listener failed (out of file
/// descriptors, say): retrying at once would spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// The answer to `method` on `path` (without its query), from `rendered`.
pub fn respond(method: &Method, path: &str, rendered: &Rendered) -> Response<Full<Bytes>> {
    // Read-only: nothing here takes a body or changes anything, whatever the path.
    if method != Method::GET && method != Method::HEAD {
        let mut response = text(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n");
        header(&mut response, ALLOW, "GET, HEAD");
        return response;
    }
    match path {
        "/" | "/index.html" => {
            let mut response = body(
                StatusCode::OK,
                "text/html; charset=utf-8",
                Bytes::from_static(PAGE.as_bytes()),
            );
            header(&mut response, CACHE_CONTROL, "no-cache");
            let policy = HeaderName::from_static("content-security-policy");
            header(&mut response, policy, PAGE_POLICY);
            response
        }
        "/api/fleet" => {
            let mut response = body(StatusCode::OK, "application/json", rendered.json.clone());
            header(&mut response, CACHE_CONTROL, "no-store");
            response
        }
        "/metrics" => {
            let mut response = body(StatusCode::OK, PROMETHEUS_TEXT, rendered.metrics.clone());
            header(&mut response, CACHE_CONTROL, "no-store");
            response
        }
        "/healthz" => text(StatusCode::OK, "ok\n"),
        _ => text(
            StatusCode::NOT_FOUND,
            "not found: / (page), /api/fleet (JSON), /metrics (Prometheus), /healthz\n",
        ),
    }
}

/// Accepts connections on `listener` and serves each in a task of its own, until dropped
/// (the task running it aborted).
pub async fn accept(listener: TcpListener, latest: Latest) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                tokio::spawn(connection(stream, latest.clone()));
            }
            // The listener stays open; a client whose connection failed retries.
            Err(_) => tokio::time::sleep(ACCEPT_BACKOFF).await,
        }
    }
}

/// Serves one connection's requests (HTTP/1, kept alive) until the client closes it.
pub async fn connection(stream: TcpStream, latest: Latest) {
    let service = service_fn(move |request: Request<Incoming>| {
        let rendered = latest.get();
        async move { Ok::<_, Infallible>(respond(request.method(), request.uri().path(), &rendered)) }
    });
    let served = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .serve_connection(TokioIo::new(stream), service)
        .await;
    // A client that goes away mid-request is its own business: nothing to report.
    drop(served);
}

fn text(status: StatusCode, message: &'static str) -> Response<Full<Bytes>> {
    body(
        status,
        "text/plain; charset=utf-8",
        Bytes::from_static(message.as_bytes()),
    )
}

fn body(status: StatusCode, content_type: &'static str, bytes: Bytes) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(bytes));
    *response.status_mut() = status;
    header(&mut response, CONTENT_TYPE, content_type);
    header(&mut response, "x-content-type-options", "nosniff");
    response
}

fn header<N: hyper::header::IntoHeaderName>(
    response: &mut Response<Full<Bytes>>,
    name: N,
    value: &'static str,
) {
    response
        .headers_mut()
        .insert(name, HeaderValue::from_static(value));
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;

    use super::*;

    fn rendered() -> Rendered {
        Rendered {
            json: Bytes::from_static(b"{\"group\":\"g\"}"),
            metrics: Bytes::from_static(b"# HELP x y\n"),
        }
    }

    async fn read(response: Response<Full<Bytes>>) -> (StatusCode, String, String) {
        let status = response.status();
        let kind = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        (status, kind, String::from_utf8(bytes.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn each_route_answers_from_what_was_rendered() {
        let rendered = rendered();
        let (status, kind, text) = read(respond(&Method::GET, "/api/fleet", &rendered)).await;
        assert_eq!(
            (status, kind.as_str(), text.as_str()),
            (StatusCode::OK, "application/json", "{\"group\":\"g\"}")
        );
        let (status, kind, text) = read(respond(&Method::GET, "/metrics", &rendered)).await;
        assert_eq!(
            (status, kind.as_str(), text.as_str()),
            (StatusCode::OK, PROMETHEUS_TEXT, "# HELP x y\n")
        );
        let (status, kind, text) = read(respond(&Method::GET, "/", &rendered)).await;
        assert_eq!(
            (status, kind.as_str()),
            (StatusCode::OK, "text/html; charset=utf-8")
        );
        assert!(text.starts_with("<!DOCTYPE html>"), "{text}");
        let (status, _, text) = read(respond(&Method::HEAD, "/healthz", &rendered)).await;
        assert_eq!((status, text.as_str()), (StatusCode::OK, "ok\n"));
        let fleet = respond(&Method::GET, "/api/fleet", &rendered);
        assert_eq!(fleet.headers()[CACHE_CONTROL], "no-store");
    }

    #[tokio::test]
    async fn other_paths_are_not_found_and_other_methods_not_allowed() {
        let rendered = rendered();
        for path in ["/api", "/api/fleet/", "/metrics.txt", "/favicon.ico", ""] {
            let (status, _, _) = read(respond(&Method::GET, path, &rendered)).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        }
        for method in [
            Method::POST,
            Method::PUT,
            Method::DELETE,
            Method::PATCH,
            Method::OPTIONS,
        ] {
            for path in ["/", "/api/fleet", "/metrics", "/nowhere"] {
                let response = respond(&method, path, &rendered);
                assert_eq!(
                    response.status(),
                    StatusCode::METHOD_NOT_ALLOWED,
                    "{method} {path}"
                );
                assert_eq!(response.headers()[ALLOW], "GET, HEAD");
            }
        }
    }
}
