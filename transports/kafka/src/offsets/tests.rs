use super::*;

fn key() -> PartitionKey {
    ("orders".to_owned(), 0)
}

/// Offsets with [`key`] freshly assigned, not resumed.
fn assigned() -> Offsets {
    let mut offsets = Offsets::default();
    offsets.assign(key(), false);
    offsets
}

#[test]
fn commits_stop_at_the_lowest_unsettled_offset() {
    let mut offsets = assigned();
    let tickets: Vec<Ticket> = (10..15)
        .map(|o| offsets.deliver(&key(), o).unwrap().0)
        .collect();
    assert!(offsets.settle(&tickets[1]));
    assert!(offsets.settle(&tickets[3]));
    assert_eq!(offsets.take_commits(), [(key(), 10)]);
    assert!(offsets.take_commits().is_empty(), "committed twice");
    assert!(offsets.settle(&tickets[0]));
    assert_eq!(offsets.take_commits(), [(key(), 12)]);
    assert!(offsets.settle(&tickets[2]));
    assert!(offsets.settle(&tickets[4]));
    assert_eq!(offsets.take_commits(), [(key(), 15)]);
}

#[test]
fn settlements_of_an_earlier_assignment_change_nothing() {
    let mut offsets = assigned();
    let (old, _) = offsets.deliver(&key(), 3).unwrap();
    assert_eq!(offsets.revoke(&key()), Some(3));
    offsets.assign(key(), true);
    assert!(!offsets.settle(&old));
    assert!(!offsets.is_current(&old));
    let (ticket, resumed) = offsets.deliver(&key(), 3).unwrap();
    assert!(resumed, "read from a resumed partition");
    let (next, resumed) = offsets.deliver(&key(), 4).unwrap();
    assert!(resumed, "read before anything settled");
    assert!(offsets.settle(&ticket));
    assert!(
        !offsets.deliver(&key(), 5).unwrap().1,
        "read after a settlement"
    );
    assert!(offsets.settle(&next));
    assert_eq!(offsets.take_commits(), [(key(), 5)]);
}

#[test]
fn held_records_are_unsettled_but_not_in_hand() {
    let mut offsets = assigned();
    let (held, _) = offsets.deliver(&key(), 0).unwrap();
    offsets.hold(&held);
    offsets.deliver(&key(), 1).unwrap();
    assert_eq!(offsets.in_hand(&[key()]), 1);
    assert_eq!(offsets.take_commits(), [(key(), 0)]);
    assert!(offsets.release(&held));
    assert_eq!(offsets.in_hand(&[key()]), 2);
}

#[test]
fn a_failed_commit_is_retried() {
    let mut offsets = assigned();
    let (t, _) = offsets.deliver(&key(), 0).unwrap();
    offsets.settle(&t);
    assert_eq!(offsets.take_commits(), [(key(), 1)]);
    offsets.commit_failed(&key(), 1);
    assert_eq!(offsets.take_commits(), [(key(), 1)]);
}

#[test]
fn unassigned_partitions_deliver_nothing() {
    let mut offsets = Offsets::default();
    assert!(offsets.deliver(&key(), 0).is_none());
    assert_eq!(offsets.revoke(&key()), None);
}
