//! Isolation levels: a store opens a working transaction at each level it
//! offers and refuses the rest.

use tidings_core::{InboxError, InboxMark, InboxStore, IsolationLevel};
use uuid::Uuid;

use super::{BILLING, InboxHarness};

/// Every store offers read committed; at each level a store offers, a
/// transaction marks, stages and commits; a level it does not offer is
/// refused as a misconfiguration, never opened weaker.
pub async fn each_offered_isolation_level_opens_a_transaction<H: InboxHarness>(h: &H) {
    let store = h.store().await;
    assert!(store.offers_isolation(IsolationLevel::ReadCommitted));
    let levels = [
        IsolationLevel::ReadCommitted,
        IsolationLevel::RepeatableRead,
        IsolationLevel::Serializable,
    ];
    let mut committed = 0;
    for level in levels {
        if !store.offers_isolation(level) {
            let refused = store.begin_at(level).await.err();
            assert!(
                matches!(refused, Some(InboxError::Misconfigured(_))),
                "{level} is not offered, so it is refused: {refused:?}"
            );
            continue;
        }
        let mut tx = store
            .begin_at(level)
            .await
            .expect("begin at an offered level");
        let mark = store.mark(&mut tx, BILLING.key(Uuid::now_v7())).await;
        assert_eq!(mark.unwrap(), InboxMark::Fresh(()), "at {level}");
        H::stage(&mut tx);
        store.commit(tx).await.expect("commit");
        committed += 1;
        assert_eq!(h.staged(&store).await, committed, "at {level}");
    }
}
