//! The dead-letter queues a page shows, of any broker: each broker's
//! reader behind one object-safe interface, so a page can show RabbitMQ,
//! SQS and Kafka dead letters side by side.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::Deserialize;

use crate::AdminError;
use crate::dead_letters::{
    DeadLetter, DeadLetterFilter, DeadLetterReport, QueueDepth, ReplayOptions,
};

/// What an operator does to the dead letters selected, named by the last
/// part of the request's path.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Action {
    /// Sends them back to their queue.
    Replay,
    /// Deletes them.
    Delete,
}

/// A boxed answer of a reader.
pub(crate) type Answer<'a, T> = Pin<Box<dyn Future<Output = Result<T, AdminError>> + Send + 'a>>;

/// What the page asks of a broker's dead-letter reader.
pub(crate) trait Reader: Send + Sync {
    /// The dead-letter queue of `queue`.
    fn dead_letter_queue_of(&self, queue: &str) -> String;
    /// Its depth.
    fn depth<'a>(&'a self, queue: &'a str) -> Answer<'a, QueueDepth>;
    /// The dead letters matching `filter`, left in place.
    fn list<'a>(
        &'a self,
        queue: &'a str,
        filter: &'a DeadLetterFilter,
    ) -> Answer<'a, Vec<DeadLetter>>;
    /// Replays or removes the dead letters matching `filter`.
    fn act<'a>(
        &'a self,
        action: Action,
        queue: &'a str,
        filter: &'a DeadLetterFilter,
        options: ReplayOptions,
    ) -> Answer<'a, DeadLetterReport>;
}

#[cfg(any(feature = "rabbitmq", feature = "sqs", feature = "kafka"))]
impl<B: crate::dead_letters::DeadLetterQueues + Send + Sync> Reader for B {
    fn dead_letter_queue_of(&self, queue: &str) -> String {
        self.dead_letter_queue(queue)
    }

    fn depth<'a>(&'a self, queue: &'a str) -> Answer<'a, QueueDepth> {
        Box::pin(crate::dead_letters::DeadLetterQueues::depth(self, queue))
    }

    fn list<'a>(
        &'a self,
        queue: &'a str,
        filter: &'a DeadLetterFilter,
    ) -> Answer<'a, Vec<DeadLetter>> {
        Box::pin(crate::dead_letters::DeadLetterQueues::list(
            self, queue, filter,
        ))
    }

    fn act<'a>(
        &'a self,
        action: Action,
        queue: &'a str,
        filter: &'a DeadLetterFilter,
        options: ReplayOptions,
    ) -> Answer<'a, DeadLetterReport> {
        use crate::dead_letters::DeadLetterQueues;
        match action {
            Action::Replay => Box::pin(DeadLetterQueues::replay(self, queue, filter, options)),
            Action::Delete => Box::pin(DeadLetterQueues::purge(self, queue, filter, options)),
        }
    }
}

/// One broker's queues on the page.
#[derive(Clone)]
pub(crate) struct Source {
    /// The broker's name as the page shows it (`rabbitmq`, `sqs`, …).
    pub(crate) broker: Arc<str>,
    pub(crate) reader: Arc<dyn Reader>,
    pub(crate) queues: Arc<[String]>,
}

/// A queue of one of the page's brokers.
#[derive(Clone)]
pub(crate) struct Queue {
    pub(crate) broker: Arc<str>,
    pub(crate) reader: Arc<dyn Reader>,
    pub(crate) name: String,
}

/// Every queue of every source, in the order they were given.
pub(crate) fn queues(sources: &[Source]) -> Vec<Queue> {
    sources
        .iter()
        .flat_map(|source| {
            source.queues.iter().map(|name| Queue {
                broker: source.broker.clone(),
                reader: source.reader.clone(),
                name: name.clone(),
            })
        })
        .collect()
}

/// The queue `name` (of `broker`, when given) among the page's.
pub(crate) fn find(sources: &[Source], broker: Option<&str>, name: &str) -> Option<Queue> {
    queues(sources)
        .into_iter()
        .find(|q| q.name == name && broker.is_none_or(|b| *q.broker == *b))
}

#[cfg_attr(
    not(any(feature = "rabbitmq", feature = "sqs", feature = "kafka")),
    allow(dead_code)
)]
/// A broker's name from its reader's type: `RabbitDeadLetters` is
/// `rabbitmq`, `SqsDeadLetters` `sqs`.
pub(crate) fn broker_name<B>() -> String {
    let full = std::any::type_name::<B>();
    let short = full.rsplit("::").next().unwrap_or(full);
    let stem = short.strip_suffix("DeadLetters").unwrap_or(short);
    match stem {
        "Rabbit" => "rabbitmq".to_owned(),
        other => other.to_ascii_lowercase(),
    }
}

#[cfg(test)]
mod tests {
    use super::broker_name;

    struct RabbitDeadLetters;
    struct SqsDeadLetters;
    struct KafkaDeadLetters;

    #[test]
    fn brokers_are_named_after_their_readers() {
        assert_eq!(broker_name::<RabbitDeadLetters>(), "rabbitmq");
        assert_eq!(broker_name::<SqsDeadLetters>(), "sqs");
        assert_eq!(broker_name::<KafkaDeadLetters>(), "kafka");
    }
}
