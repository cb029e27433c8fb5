//! A batch split across confirm channels without reordering any key.
//!
//! Messages with an ordering key go to the channel their key hashes to, in
//! batch order, so a key's messages share one channel and reach the queue
//! in the order they were handed over; messages without one are cut into
//! runs of consecutive messages, one run per channel. A channel's messages
//! are confirmed independently of the others', so it is only across keys
//! that the broker may take them in another order than the batch's.

use std::hash::{DefaultHasher, Hash, Hasher};

use tidings_core::{Envelope, PublishError};

/// A batch's messages by confirm channel, with their places in the batch.
#[derive(Debug)]
pub(crate) struct Lanes<'a> {
    lanes: Vec<Vec<&'a Envelope>>,
    places: Vec<Vec<usize>>,
}

impl<'a> Lanes<'a> {
    /// Splits `envelopes` across `channels` confirm channels (at least one).
    pub(crate) fn of(envelopes: &'a [Envelope], channels: usize) -> Self {
        let channels = channels.max(1);
        let mut lanes: Vec<Vec<&Envelope>> = vec![Vec::new(); channels];
        let mut places: Vec<Vec<usize>> = vec![Vec::new(); channels];
        let len = envelopes.len().max(1);
        for (place, envelope) in envelopes.iter().enumerate() {
            let lane = match &envelope.ordering_key {
                Some(key) if channels > 1 => hashed(key, channels),
                _ => place * channels / len,
            };
            lanes[lane].push(envelope);
            places[lane].push(place);
        }
        Self { lanes, places }
    }

    /// Each channel's messages, with the channel's number, in batch order;
    /// channels given nothing are left out.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (usize, &[&'a Envelope])> {
        self.lanes
            .iter()
            .enumerate()
            .filter(|(_, lane)| !lane.is_empty())
            .map(|(n, lane)| (n, lane.as_slice()))
    }

    /// Puts the channels' results, given in the order of [`iter`](Self::iter),
    /// back into batch order.
    pub(crate) fn merge(
        &self,
        results: Vec<Vec<Result<(), PublishError>>>,
    ) -> Vec<Result<(), PublishError>> {
        let len = self.places.iter().map(Vec::len).sum();
        let mut merged: Vec<Option<Result<(), PublishError>>> = (0..len).map(|_| None).collect();
        let places = self.places.iter().filter(|p| !p.is_empty());
        for (places, results) in places.zip(results) {
            for (place, result) in places.iter().zip(results) {
                merged[*place] = Some(result);
            }
        }
        merged
            .into_iter()
            .map(|r| r.unwrap_or(Err(PublishError::Timeout)))
            .collect()
    }
}

/// The channel a key's messages take.
fn hashed(key: &str, channels: usize) -> usize {
    let mut hasher = DefaultHasher::new();
    key.hash(&mut hasher);
    (hasher.finish() % channels as u64) as usize
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    fn envelope(n: usize, key: Option<&str>) -> Envelope {
        let mut e = Envelope::new("r", "q", "t", Bytes::from(n.to_string()), "text/plain");
        e.ordering_key = key.map(str::to_owned);
        e
    }

    fn payloads(lane: &[&Envelope]) -> Vec<String> {
        let text = |e: &&Envelope| String::from_utf8(e.payload.to_vec()).unwrap();
        lane.iter().map(text).collect()
    }

    #[test]
    fn a_keys_messages_share_a_channel_in_batch_order() {
        let keys = ["a", "b", "c", "d", "e"];
        let batch: Vec<Envelope> = (0..50).map(|n| envelope(n, Some(keys[n % 5]))).collect();
        let lanes = Lanes::of(&batch, 4);
        let mut seen = 0;
        for (_, lane) in lanes.iter() {
            for key in keys {
                let of_key: Vec<&Envelope> = lane
                    .iter()
                    .copied()
                    .filter(|e| e.ordering_key.as_deref() == Some(key))
                    .collect();
                let expected: Vec<String> = (0..50)
                    .filter(|n| keys[n % 5] == key)
                    .map(|n| n.to_string())
                    .collect();
                assert!(
                    of_key.is_empty() || payloads(&of_key) == expected,
                    "key {key}"
                );
            }
            seen += lane.len();
        }
        assert_eq!(seen, 50);
    }

    #[test]
    fn messages_without_keys_go_in_runs_and_results_come_back_in_batch_order() {
        let batch: Vec<Envelope> = (0..10).map(|n| envelope(n, None)).collect();
        let lanes = Lanes::of(&batch, 3);
        let runs: Vec<Vec<String>> = lanes.iter().map(|(_, lane)| payloads(lane)).collect();
        assert_eq!(
            runs,
            [
                vec!["0", "1", "2", "3"],
                vec!["4", "5", "6"],
                vec!["7", "8", "9"]
            ]
        );
        let results = lanes
            .iter()
            .map(|(n, lane)| {
                let fail = |_: &&Envelope| match n {
                    1 => Err(PublishError::Timeout),
                    _ => Ok(()),
                };
                lane.iter().map(fail).collect()
            })
            .collect();
        let merged = lanes.merge(results);
        let failed: Vec<usize> = (0..10).filter(|&i| merged[i].is_err()).collect();
        assert_eq!(failed, [4, 5, 6]);
    }
}
