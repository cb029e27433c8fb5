//! A bare HTTP/1.1 client for tests of servers the project serves (the
//! console and its JSON API): one request per connection, no dependency.

use std::net::SocketAddr;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Sends one request to `address` (`body` as JSON, `token` as a bearer
/// token) and returns the answer's status line and its body.
///
/// ```no_run
/// # async fn demo(address: std::net::SocketAddr) {
/// let (status, body) = tidings_testing::http::request(address, "GET", "/api/status", None, None).await;
/// assert!(status.contains(" 200 "), "{status} {body}");
/// # }
/// ```
///
/// # Panics
///
/// When nothing listens on `address` or the connection fails.
pub async fn request(
    address: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&str>,
    token: Option<&str>,
) -> (String, String) {
    let mut stream = tokio::net::TcpStream::connect(address)
        .await
        .unwrap_or_else(|e| panic!("nothing answers on {address}: {e}"));
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let body = body.unwrap_or("");
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n{auth}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream
        .write_all(request.as_bytes())
        .await
        .expect("send the request");
    let mut answer = String::new();
    stream
        .read_to_string(&mut answer)
        .await
        .expect("read the answer");
    let status = answer.lines().next().unwrap_or_default().to_owned();
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}
