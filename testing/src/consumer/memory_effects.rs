//! The effects of a consumer on the in-memory store: a table `effects`
//! holding, per order id, how many times its effect was applied.

use std::collections::HashMap;

use tidings_consumer::TxHandle;
use tidings_core::Message;
use tidings_core::memory::{MemoryContext, MemoryStore};

use super::Order;

/// The table the effects are kept in.
const TABLE: &str = "effects";

/// Adds one to the effect counter of `msg`'s order in the handler's
/// transaction.
pub async fn count_effect(msg: &Message<Order>, tx: &TxHandle<MemoryContext>) {
    add_effect(tx, msg.payload.id).await;
}

/// Adds one to order `id`'s effect counter in the handler's transaction.
pub async fn add_effect(tx: &TxHandle<MemoryContext>, id: u32) {
    let mut tx = tx.lock().await;
    let key = id.to_string();
    let seen = tx.get(TABLE, &key).map_or(0, |b| counter(&b));
    tx.insert(TABLE, key, (seen + 1).to_string());
}

/// The effect counters of `store`, per order id.
pub fn effects(store: &MemoryStore) -> HashMap<u32, u32> {
    let table = store.table(TABLE).into_iter();
    table
        .map(|(id, count)| (id.parse().expect("an order id"), counter(&count)))
        .collect()
}

fn counter(bytes: &[u8]) -> u32 {
    let text = std::str::from_utf8(bytes).expect("a counter");
    text.parse().expect("a counter")
}
