//! The ids each consumed order arrives with.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tidings_consumer::{Handler, TxHandle, handler_fn};
use tidings_core::Message;
use tidings_testing::consumer::Order;

/// `(correlation id, causation id)` of an envelope.
pub(crate) type Ids = (Option<String>, Option<String>);

/// Each order's [`Ids`], as a [`recording_ids`] handler records them.
pub(crate) type SeenIds = Arc<Mutex<HashMap<u32, Ids>>>;

/// A handler that records each order's ids in `seen`, and writes nothing.
pub(crate) fn recording_ids<Tx: Send + 'static>(
    seen: &SeenIds,
) -> impl Handler<Order, Tx> + use<Tx> {
    let seen = seen.clone();
    handler_fn(move |msg: Message<Order>, _tx: TxHandle<Tx>| {
        let seen = seen.clone();
        async move {
            let e = &msg.envelope;
            let ids = (e.correlation_id.clone(), e.causation_id.clone());
            seen.lock().unwrap().insert(msg.payload.id, ids);
            Ok(())
        }
    })
}
