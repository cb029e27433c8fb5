//! A publisher whose answers a test scripts.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tidings_core::{Envelope, PublishBatch, PublishError, Publisher};
use tokio::sync::Notify;

/// What the scripted publisher answers to one publish.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Answer {
    Accept,
    Transient,
    Unroutable,
}

/// Answers publishes from a script (then with `fallback`), records what it
/// accepted, and can hold publishes at a gate.
#[derive(Clone)]
pub(crate) struct Scripted {
    script: Arc<Mutex<VecDeque<Answer>>>,
    fallback: Answer,
    pub(crate) accepted: Arc<Mutex<Vec<Envelope>>>,
    pub(crate) calls: Arc<Mutex<usize>>,
    gate: Option<Arc<Gate>>,
}

/// Holds publishes until opened.
#[derive(Default)]
pub(crate) struct Gate {
    pub(crate) entered: Notify,
    pub(crate) open: Notify,
}

impl Scripted {
    pub(crate) fn always(answer: Answer) -> Self {
        Self {
            script: Arc::default(),
            fallback: answer,
            accepted: Arc::default(),
            calls: Arc::default(),
            gate: None,
        }
    }

    pub(crate) fn gated(gate: Arc<Gate>) -> Self {
        Self {
            gate: Some(gate),
            ..Self::always(Answer::Accept)
        }
    }

    pub(crate) fn calls(&self) -> usize {
        *self.calls.lock().unwrap()
    }
}

impl Publisher for Scripted {
    async fn send(&self, batch: PublishBatch<'_>) -> Vec<Result<(), PublishError>> {
        batch.each(|envelope| self.publish_one(envelope)).await
    }

    fn messaging_system(&self) -> &'static str {
        "test"
    }
}

impl Scripted {
    async fn publish_one(&self, envelope: &Envelope) -> Result<(), PublishError> {
        *self.calls.lock().unwrap() += 1;
        if let Some(gate) = &self.gate {
            gate.entered.notify_one();
            gate.open.notified().await;
        }
        let answer = self
            .script
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or(self.fallback);
        match answer {
            Answer::Accept => {
                self.accepted.lock().unwrap().push(envelope.clone());
                Ok(())
            }
            Answer::Transient => Err(PublishError::Unavailable("connection reset".into())),
            Answer::Unroutable => Err(PublishError::Unroutable {
                destination: envelope.destination.clone(),
            }),
        }
    }
}
