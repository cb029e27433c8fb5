//! A publisher whose answers a test scripts.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tidings_core::{Envelope, PublishError};
use tidings_testing::publisher::{PublishEach, PublishOne};
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
    /// A publisher answering every publish with `answer`.
    pub(crate) fn always(answer: Answer) -> PublishEach<Self> {
        Self::publisher(answer, None)
    }

    /// A publisher accepting every publish once `gate` opens.
    pub(crate) fn gated(gate: Arc<Gate>) -> PublishEach<Self> {
        Self::publisher(Answer::Accept, Some(gate))
    }

    fn publisher(fallback: Answer, gate: Option<Arc<Gate>>) -> PublishEach<Self> {
        PublishEach::new(Self {
            script: Arc::default(),
            fallback,
            accepted: Arc::default(),
            calls: Arc::default(),
            gate,
        })
    }

    pub(crate) fn calls(&self) -> usize {
        *self.calls.lock().unwrap()
    }
}

impl PublishOne for Scripted {
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
