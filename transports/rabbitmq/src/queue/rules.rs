//! Which queue settings go together: checked before the broker is asked.

use super::kind::{Overflow, QueueKind};
use super::limits::Limits;
use super::{DeadLetterOptions, QueueOptions};

/// Settings of a [`QueueOptions`] that do not go together; the setting is
/// named as its setter is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum QueueOptionsError {
    /// The setting does not exist for this queue type.
    #[error("{setting} is not supported on a {kind} queue, only on {supported}")]
    Unsupported {
        /// The setting, such as `QueueOptions::delivery_limit`.
        setting: &'static str,
        /// The type of the queue it was set for.
        kind: QueueKind,
        /// The queue types that support it.
        supported: &'static str,
    },
    /// An overflow behaviour without a length limit to overflow.
    #[error("{setting} needs a max_length or max_length_bytes beside it")]
    OverflowWithoutLimit {
        /// The setting, such as `QueueOptions::overflow`.
        setting: &'static str,
    },
    /// `reject-publish-dlx` on a queue without a dead-letter exchange.
    #[error("{setting} reject-publish-dlx needs a dead-letter exchange, which the {queue} has not")]
    NoDeadLetterExchange {
        /// The setting, such as `DeadLetterOptions::overflow`.
        setting: &'static str,
        /// The queue it was set for.
        queue: &'static str,
    },
}

/// Which queue a setting belongs to, to name it in errors.
#[derive(Clone, Copy)]
enum Role {
    Queue,
    DeadLetter,
}

impl Role {
    fn setting(self, name: &'static str) -> &'static str {
        match (self, name) {
            (Self::Queue, "max_length") => "QueueOptions::max_length",
            (Self::Queue, "overflow") => "QueueOptions::overflow",
            (Self::Queue, _) => "QueueOptions::expires",
            (Self::DeadLetter, "max_length") => "DeadLetterOptions::max_length",
            (Self::DeadLetter, "overflow") => "DeadLetterOptions::overflow",
            (Self::DeadLetter, _) => "QueueOptions::expires (for the dead-letter queue)",
        }
    }
}

impl QueueOptions {
    /// Checks that the settings go together and that the queue types
    /// support them.
    ///
    /// # Errors
    ///
    /// The first [`QueueOptionsError`] found.
    pub fn check(&self) -> Result<(), QueueOptionsError> {
        let kind = self.get_kind();
        if self.get_delivery_limit().is_some() && kind != QueueKind::Quorum {
            return Err(unsupported(
                "QueueOptions::delivery_limit",
                kind,
                "quorum queues",
            ));
        }
        if self.get_single_active_consumer() && kind == QueueKind::Stream {
            return Err(unsupported(
                "QueueOptions::single_active_consumer",
                kind,
                "classic and quorum queues",
            ));
        }
        let expires = self.get_expires().is_some();
        check_limits(Role::Queue, kind, &self.limits, expires)?;
        let dead_letter = self.get_dead_letter();
        check_dead_letter(&dead_letter, dead_letter.kind_for(kind), expires)
    }
}

fn check_dead_letter(
    options: &DeadLetterOptions,
    kind: QueueKind,
    expires: bool,
) -> Result<(), QueueOptionsError> {
    if options.limits.overflow == Some(Overflow::RejectPublishDlx) {
        return Err(QueueOptionsError::NoDeadLetterExchange {
            setting: "DeadLetterOptions::overflow",
            queue: "dead-letter queue",
        });
    }
    check_limits(Role::DeadLetter, kind, &options.limits, expires)
}

fn check_limits(
    role: Role,
    kind: QueueKind,
    limits: &Limits,
    expires: bool,
) -> Result<(), QueueOptionsError> {
    let not_stream = "classic and quorum queues";
    if kind == QueueKind::Stream {
        if expires {
            return Err(unsupported(role.setting("expires"), kind, not_stream));
        }
        if limits.max_length.is_some() {
            return Err(unsupported(role.setting("max_length"), kind, not_stream));
        }
        if limits.overflow.is_some() {
            return Err(unsupported(role.setting("overflow"), kind, not_stream));
        }
    }
    match limits.overflow {
        Some(_) if !limits.bounded() => Err(QueueOptionsError::OverflowWithoutLimit {
            setting: role.setting("overflow"),
        }),
        Some(Overflow::RejectPublishDlx) if kind != QueueKind::Classic => Err(unsupported(
            "QueueOptions::overflow reject-publish-dlx",
            kind,
            "classic queues",
        )),
        _ => Ok(()),
    }
}

fn unsupported(
    setting: &'static str,
    kind: QueueKind,
    supported: &'static str,
) -> QueueOptionsError {
    QueueOptionsError::Unsupported {
        setting,
        kind,
        supported,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn defaults_pass() {
        for kind in [QueueKind::Classic, QueueKind::Quorum, QueueKind::Stream] {
            assert_eq!(QueueOptions::from(kind).check(), Ok(()));
        }
    }

    #[test]
    fn delivery_limit_needs_a_quorum_queue() {
        let error = QueueOptions::classic()
            .delivery_limit(5)
            .check()
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "QueueOptions::delivery_limit is not supported on a classic queue, only on quorum queues"
        );
        assert_eq!(QueueOptions::quorum().delivery_limit(5).check(), Ok(()));
    }

    #[test]
    fn overflow_needs_a_limit() {
        let error = QueueOptions::classic()
            .overflow(Overflow::RejectPublish)
            .check()
            .unwrap_err();
        assert_eq!(
            error,
            QueueOptionsError::OverflowWithoutLimit {
                setting: "QueueOptions::overflow"
            }
        );
        let bounded = QueueOptions::classic()
            .max_length_bytes(1 << 20)
            .overflow(Overflow::RejectPublish);
        assert_eq!(bounded.check(), Ok(()));
    }

    #[test]
    fn reject_publish_dlx_needs_a_classic_queue_with_a_dead_letter_exchange() {
        let classic = QueueOptions::classic()
            .max_length(10)
            .overflow(Overflow::RejectPublishDlx);
        assert_eq!(classic.check(), Ok(()));
        assert!(classic.kind(QueueKind::Quorum).check().is_err());
        let dead_letter = DeadLetterOptions::default()
            .max_length(10)
            .overflow(Overflow::RejectPublishDlx);
        let error = QueueOptions::classic()
            .dead_letter(dead_letter)
            .check()
            .unwrap_err();
        assert!(matches!(
            error,
            QueueOptionsError::NoDeadLetterExchange { .. }
        ));
    }

    #[test]
    fn streams_refuse_what_they_do_not_have() {
        let stream = QueueOptions::stream();
        assert!(stream.single_active_consumer(true).check().is_err());
        assert!(stream.max_length(10).check().is_err());
        assert!(stream.expires(Duration::from_secs(60)).check().is_err());
        assert_eq!(stream.max_length_bytes(1 << 30).check(), Ok(()));
        let stream_dead_letters = QueueOptions::classic()
            .dead_letter(DeadLetterOptions::default().kind(QueueKind::Stream));
        assert_eq!(stream_dead_letters.check(), Ok(()));
        let error = stream_dead_letters
            .expires(Duration::from_secs(60))
            .check()
            .unwrap_err();
        assert!(
            error.to_string().contains("for the dead-letter queue"),
            "{error}"
        );
    }
}
