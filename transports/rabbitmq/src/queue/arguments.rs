//! The `x-` arguments each declared queue gets: the one place settings
//! become arguments, and arguments are traced back to settings.

use std::time::Duration;

use lapin::types::{AMQPValue, FieldTable, LongString, ShortString};

use super::kind::QueueKind;
use super::limits::Limits;
use super::{DeadLetterOptions, QueueOptions};

/// Which of a queue's declared queues an argument belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// The queue consumers read.
    Queue,
    /// Its dead-letter queue `q.dlq`.
    DeadLetter,
    /// Its delay queue `q.delay`.
    Delay,
}

/// The arguments of the queue itself, dead-lettering into
/// `dead_letter_exchange` (streams do not dead-letter, so they get none).
pub(crate) fn queue_arguments(options: &QueueOptions, dead_letter_exchange: &str) -> FieldTable {
    let kind = options.get_kind();
    let mut args = base(kind, options.get_expires());
    if kind != QueueKind::Stream {
        put_str(&mut args, "x-dead-letter-exchange", dead_letter_exchange);
    }
    if options.get_single_active_consumer() {
        args.insert("x-single-active-consumer".into(), AMQPValue::Boolean(true));
    }
    if let Some(limit) = options.get_delivery_limit() {
        put_int(&mut args, "x-delivery-limit", u64::from(limit));
    }
    put_limits(&mut args, &options.limits);
    args
}

/// The arguments of the dead-letter queue.
pub(crate) fn dead_letter_arguments(options: &QueueOptions) -> FieldTable {
    let dead_letter: DeadLetterOptions = options.get_dead_letter();
    let kind = dead_letter.kind_for(options.get_kind());
    let mut args = base(kind, options.get_expires());
    put_limits(&mut args, &dead_letter.limits);
    args
}

/// The arguments of the delay queue: a classic queue whose expired
/// messages go back to `queue` through the default exchange.
pub(crate) fn delay_arguments(queue: &str, options: &QueueOptions) -> FieldTable {
    let mut args = base(QueueKind::Classic, options.get_expires());
    put_str(&mut args, "x-dead-letter-exchange", "");
    put_str(&mut args, "x-dead-letter-routing-key", queue);
    args
}

/// The setting that decides `argument` of the queue in `role`, or `None`
/// when tidings fixes it.
pub(crate) fn setting_of(role: Role, argument: &str) -> Option<&'static str> {
    let setting = match (role, argument) {
        (_, "x-expires") => "QueueOptions::expires",
        (Role::Delay, _) => return None,
        (Role::Queue, "x-queue-type") => "QueueOptions::kind",
        (Role::Queue, "x-single-active-consumer") => "QueueOptions::single_active_consumer",
        (Role::Queue, "x-delivery-limit") => "QueueOptions::delivery_limit",
        (Role::Queue, "x-max-length") => "QueueOptions::max_length",
        (Role::Queue, "x-max-length-bytes") => "QueueOptions::max_length_bytes",
        (Role::Queue, "x-overflow") => "QueueOptions::overflow",
        (Role::DeadLetter, "x-queue-type") => "DeadLetterOptions::kind",
        (Role::DeadLetter, "x-max-length") => "DeadLetterOptions::max_length",
        (Role::DeadLetter, "x-max-length-bytes") => "DeadLetterOptions::max_length_bytes",
        (Role::DeadLetter, "x-overflow") => "DeadLetterOptions::overflow",
        _ => return None,
    };
    Some(setting)
}

fn base(kind: QueueKind, expires: Option<Duration>) -> FieldTable {
    let mut args = FieldTable::default();
    put_str(&mut args, "x-queue-type", kind.as_str());
    if let Some(expires) = expires {
        let millis = u64::try_from(expires.as_millis()).unwrap_or(u64::MAX);
        put_int(&mut args, "x-expires", millis.max(1));
    }
    args
}

fn put_limits(args: &mut FieldTable, limits: &Limits) {
    if let Some(messages) = limits.max_length {
        put_int(args, "x-max-length", messages);
    }
    if let Some(bytes) = limits.max_length_bytes {
        put_int(args, "x-max-length-bytes", bytes);
    }
    if let Some(overflow) = limits.overflow {
        put_str(args, "x-overflow", overflow.as_str());
    }
}

fn put_str(args: &mut FieldTable, name: &str, value: &str) {
    args.insert(
        ShortString::from(name),
        AMQPValue::LongString(LongString::from(value)),
    );
}

fn put_int(args: &mut FieldTable, name: &str, value: u64) {
    let value = i64::try_from(value).unwrap_or(i64::MAX);
    args.insert(ShortString::from(name), AMQPValue::LongLongInt(value));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Overflow;

    fn names(args: &FieldTable) -> Vec<String> {
        args.inner().keys().map(|k| k.to_string()).collect()
    }

    #[test]
    fn defaults_send_only_the_type_and_dead_letter_exchange() {
        let args = queue_arguments(&QueueOptions::classic(), "q.dlx");
        assert_eq!(names(&args), ["x-dead-letter-exchange", "x-queue-type"]);
    }

    #[test]
    fn every_setting_has_its_argument() {
        let options = QueueOptions::quorum()
            .single_active_consumer(true)
            .delivery_limit(7)
            .max_length(10)
            .max_length_bytes(1000)
            .overflow(Overflow::RejectPublish);
        let args = queue_arguments(&options, "q.dlx");
        for name in names(&args) {
            if name != "x-dead-letter-exchange" {
                assert!(setting_of(Role::Queue, &name).is_some(), "{name}");
            }
        }
        assert_eq!(
            args.inner().get("x-delivery-limit"),
            Some(&AMQPValue::LongLongInt(7))
        );
        assert_eq!(names(&args).len(), 7);
    }

    #[test]
    fn streams_get_no_dead_letter_exchange_and_their_dead_letters_a_classic_queue() {
        let options = QueueOptions::stream();
        assert_eq!(names(&queue_arguments(&options, "q.dlx")), ["x-queue-type"]);
        assert_eq!(
            dead_letter_arguments(&options).inner().get("x-queue-type"),
            Some(&AMQPValue::LongString("classic".into()))
        );
    }
}
