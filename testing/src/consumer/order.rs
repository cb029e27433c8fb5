//! Order within a key while keys run concurrently.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tidings_consumer::{TxHandle, handler_fn};
use tidings_core::Message;

use super::world::{ConsumerWorld, Effects, Order, WorldTx, consumer, options, order, run_until};

/// What the handler saw: keys running now, the most at once, overlaps of
/// one key, and each key's ids in the order their effects were written
/// (a try that failed, a store's write conflict say, is tried again and
/// not recorded).
#[derive(Default)]
struct Seen {
    running: Mutex<HashSet<String>>,
    peak: AtomicU32,
    overlaps: AtomicU32,
    ids: Mutex<HashMap<String, Vec<u32>>>,
}

impl Seen {
    fn start(&self, key: &str) {
        let mut running = self.running.lock().expect("running keys");
        if !running.insert(key.to_owned()) {
            self.overlaps.fetch_add(1, SeqCst);
        }
        self.peak.fetch_max(running.len() as u32, SeqCst);
    }

    fn end(&self, key: &str, applied: Option<u32>) {
        if let Some(id) = applied {
            let mut ids = self.ids.lock().expect("ids seen");
            ids.entry(key.to_owned()).or_default().push(id);
        }
        self.running.lock().expect("running keys").remove(key);
    }
}

/// Messages of one ordering key are handled one at a time in the order
/// sent, while different keys run at once.
pub async fn per_key_messages_run_one_at_a_time_in_order<W: ConsumerWorld>(world: &Arc<W>) {
    const MESSAGES: u32 = 60;
    let keys = ["a", "b", "c", "d", "e"];
    for id in 0..MESSAGES {
        let key = keys[id as usize % keys.len()];
        world.publish(&order(world.as_ref(), id, Some(key))).await;
    }
    let seen = Arc::new(Seen::default());
    let handler = handler_fn({
        let (world, seen) = (world.clone(), seen.clone());
        move |msg: Message<Order>, tx: TxHandle<WorldTx<W>>| {
            let (world, seen) = (world.clone(), seen.clone());
            async move {
                let key = msg.ordering_key().unwrap_or_default().to_owned();
                seen.start(&key);
                tokio::time::sleep(Duration::from_millis(5)).await;
                let applied = world.apply(&tx, msg.payload.id).await;
                seen.end(&key, applied.is_ok().then_some(msg.payload.id));
                applied
            }
        }
    });
    let consumer = consumer(world.as_ref(), handler, options().concurrency(8));
    run_until::<W, _, _, _>(consumer, |report| async move {
        report.processed == u64::from(MESSAGES)
    })
    .await;

    let orders = u64::from(MESSAGES);
    assert_eq!(world.effects().await, Effects { orders, most: 1 });
    assert_eq!(
        seen.overlaps.load(SeqCst),
        0,
        "two messages of one key ran at once"
    );
    assert!(seen.peak.load(SeqCst) > 1, "keys never ran concurrently");
    let ids = seen.ids.lock().expect("ids seen");
    for (i, key) in keys.iter().enumerate() {
        let sent: Vec<u32> = (0..MESSAGES)
            .filter(|id| *id as usize % keys.len() == i)
            .collect();
        assert_eq!(ids[*key], sent, "key {key} out of order");
    }
}
