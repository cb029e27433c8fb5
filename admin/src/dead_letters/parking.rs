//! What the parking acker recorded on a dead letter: how many deliveries it
//! had, when it was parked and when its first delivery failed.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tidings_core::{FIRST_FAILURE_HEADER, PARKED_AT_HEADER, PARKED_DELIVERIES_HEADER};

use super::DeadLetter;

impl DeadLetter {
    /// Fills [`deliveries`](Self::deliveries),
    /// [`parked_age_secs`](Self::parked_age_secs) and
    /// [`first_failure_age_secs`](Self::first_failure_age_secs) from the
    /// headers the parking acker wrote; a header missing or not a number
    /// leaves its field `None`. The count shown is the acker's, never one
    /// the broker keeps of reads.
    pub fn read_parking_headers(&mut self) {
        let now = SystemTime::now();
        self.deliveries = self
            .headers
            .get(PARKED_DELIVERIES_HEADER)
            .and_then(|n| n.trim().parse().ok());
        self.parked_age_secs = age(self.headers.get(PARKED_AT_HEADER), now);
        self.first_failure_age_secs = age(self.headers.get(FIRST_FAILURE_HEADER), now);
    }
}

/// Seconds from a time in milliseconds since the epoch to `now`; zero for a
/// time ahead of `now`.
fn age(millis: Option<&String>, now: SystemTime) -> Option<f64> {
    let millis: u64 = millis?.trim().parse().ok()?;
    let then = UNIX_EPOCH + Duration::from_millis(millis);
    Some(now.duration_since(then).unwrap_or_default().as_secs_f64())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn millis_ago(secs: u64) -> String {
        let then = SystemTime::now() - Duration::from_secs(secs);
        then.duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis()
            .to_string()
    }

    #[test]
    fn the_acker_record_fills_the_letter() {
        let headers = BTreeMap::from([
            (PARKED_DELIVERIES_HEADER.to_owned(), "3".to_owned()),
            (PARKED_AT_HEADER.to_owned(), millis_ago(60)),
            (FIRST_FAILURE_HEADER.to_owned(), millis_ago(600)),
            ("x-delivery-count".to_owned(), "57".to_owned()),
        ]);
        let mut letter = DeadLetter::new("e-1".into(), headers, b"{}");
        letter.read_parking_headers();
        assert_eq!(letter.deliveries, Some(3), "the broker's count was read");
        let parked = letter.parked_age_secs.unwrap();
        let failing = letter.first_failure_age_secs.unwrap();
        assert!((59.0..120.0).contains(&parked), "{parked}");
        assert!((599.0..700.0).contains(&failing), "{failing}");
    }

    #[test]
    fn missing_or_garbled_headers_leave_the_fields_empty() {
        let headers = BTreeMap::from([
            (PARKED_DELIVERIES_HEADER.to_owned(), "many".to_owned()),
            (PARKED_AT_HEADER.to_owned(), "yesterday".to_owned()),
        ]);
        let mut letter = DeadLetter::new("e-1".into(), headers, b"{}");
        letter.read_parking_headers();
        assert_eq!(
            (
                letter.deliveries,
                letter.parked_age_secs,
                letter.first_failure_age_secs
            ),
            (None, None, None)
        );
    }

    #[test]
    fn a_time_ahead_of_the_clock_is_no_age() {
        let ahead = (SystemTime::now() + Duration::from_secs(30))
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis()
            .to_string();
        assert_eq!(age(Some(&ahead), SystemTime::now()), Some(0.0));
    }
}
