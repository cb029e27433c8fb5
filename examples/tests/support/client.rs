//! Orders placed over real HTTP with hyper's client.

use std::net::SocketAddr;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Request, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

/// What the service answered to one `POST /orders`.
#[derive(Debug)]
pub(crate) struct Answer {
    /// The HTTP status.
    pub(crate) status: StatusCode,
    /// The JSON body.
    pub(crate) body: serde_json::Value,
}

impl Answer {
    /// The id of a placed order (`201` with `{"id": ..}`).
    pub(crate) fn order_id(&self) -> i64 {
        assert_eq!(self.status, StatusCode::CREATED, "{self:?}");
        self.body["id"].as_i64().expect("a placed order's id")
    }
}

/// An HTTP/1.1 client for one service, with a pool of keep-alive
/// connections.
#[derive(Clone)]
pub(crate) struct OrdersClient {
    http: Client<HttpConnector, Full<Bytes>>,
    base: String,
}

impl OrdersClient {
    /// A client of the service at `address`.
    pub(crate) fn new(address: SocketAddr) -> Self {
        Self {
            http: Client::builder(TokioExecutor::new()).build_http(),
            base: format!("http://{address}"),
        }
    }

    /// `POST /orders` with the customer and amount.
    pub(crate) async fn place(&self, customer: &str, amount_cents: i64) -> Answer {
        let body = serde_json::json!({ "customer": customer, "amount_cents": amount_cents });
        let request = Request::post(format!("{}/orders", self.base))
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body.to_string())))
            .expect("a valid request");
        let response = self.http.request(request).await.expect("POST /orders");
        let status = response.status();
        let collected = response.into_body().collect().await;
        let bytes = collected.expect("read the answer").to_bytes();
        let body = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            panic!(
                "{status}: not JSON ({e}): {}",
                String::from_utf8_lossy(&bytes)
            )
        });
        Answer { status, body }
    }
}
