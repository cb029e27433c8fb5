//! What lands in a dead-letter queue while a test runs.

use std::sync::{Arc, Mutex};

use futures::{Stream, StreamExt};
use tidings_core::{Acker, DEAD_LETTER_REASON_HEADER, Delivery, SourceError};

use super::Order;

/// The orders parked so far: `(order id, reason)`, in arrival order.
pub type Parked = Arc<Mutex<Vec<(u32, String)>>>;

/// Gathers each order that arrives on the dead-letter `stream` with its
/// reason, acking it, on a task of its own, until the stream ends.
pub fn collect_parked<A, St>(mut stream: St) -> Parked
where
    A: Acker,
    St: Stream<Item = Result<Delivery<A>, SourceError>> + Send + Unpin + 'static,
{
    let parked = Parked::default();
    tokio::spawn({
        let parked = parked.clone();
        async move {
            while let Some(Ok(delivery)) = stream.next().await {
                let envelope = delivery.envelope();
                let order: Order = serde_json::from_slice(&envelope.payload).expect("an order");
                let reason = envelope.headers[DEAD_LETTER_REASON_HEADER].clone();
                parked.lock().expect("parked").push((order.id, reason));
                delivery.ack().await.expect("ack");
            }
        }
    });
    parked
}
