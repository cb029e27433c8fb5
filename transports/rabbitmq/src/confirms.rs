//! A batch's sends and confirms: its frames queued together, its confirms
//! awaited under one deadline.

use std::future::poll_fn;
use std::task::Poll;

use futures::StreamExt;
use futures::future::maybe_done;
use futures::stream::FuturesUnordered;
use lapin::Confirmation;
use tokio::time::{Instant, sleep_until};

use crate::outgoing::Sent;

/// Drives every send to its end, polling them in batch order each time.
///
/// A send queues its frames on its first poll and then waits until the
/// connection has written them; polled together, a batch's frames are
/// queued in order and written in a few large writes, instead of one
/// write, and one wait for it, per message.
pub(crate) async fn sent_in_order<F: Future>(sends: Vec<F>) -> Vec<F::Output> {
    let mut sends: Vec<_> = sends.into_iter().map(|s| Box::pin(maybe_done(s))).collect();
    poll_fn(|cx| {
        let mut all_done = true;
        for send in &mut sends {
            all_done &= send.as_mut().poll(cx).is_ready();
        }
        match all_done {
            true => Poll::Ready(()),
            false => Poll::Pending,
        }
    })
    .await;
    sends
        .iter_mut()
        .filter_map(|send| send.as_mut().take_output())
        .collect()
}

/// Awaits every confirm until `deadline`, under one timer for the batch
/// rather than one per message; a confirm still missing then reads as no
/// answer.
pub(crate) async fn confirmed_by<C>(
    deadline: Instant,
    sent: Vec<Result<C, lapin::Error>>,
) -> Vec<Sent>
where
    C: Future<Output = Result<Confirmation, lapin::Error>>,
{
    let mut answers: Vec<Sent> = Vec::with_capacity(sent.len());
    let waiting = FuturesUnordered::new();
    for (index, sent) in sent.into_iter().enumerate() {
        match sent {
            Ok(confirm) => {
                answers.push(Err(()));
                waiting.push(async move { (index, confirm.await) });
            }
            Err(error) => answers.push(Ok(Err(error))),
        }
    }
    let confirms = waiting.take_until(sleep_until(deadline));
    let mut confirms = std::pin::pin!(confirms);
    while let Some((index, answer)) = confirms.next().await {
        answers[index] = Ok(answer);
    }
    answers
}

#[cfg(test)]
mod tests {
    use std::future::{Future, pending, ready};
    use std::pin::Pin;
    use std::time::Duration;

    use super::*;

    type Confirm = Pin<Box<dyn Future<Output = Result<Confirmation, lapin::Error>> + Send>>;

    #[tokio::test(start_paused = true)]
    async fn confirms_missing_at_the_deadline_read_as_no_answer() {
        let sent: Vec<Result<Confirm, lapin::Error>> = vec![
            Ok(Box::pin(ready(Ok(Confirmation::Ack(None))))),
            Ok(Box::pin(pending())),
            Err(lapin::ErrorKind::InvalidChannelState(lapin::ChannelState::Closed, "test").into()),
            Ok(Box::pin(async {
                tokio::time::sleep(Duration::from_millis(5)).await;
                Ok(Confirmation::Nack(None))
            })),
        ];
        let deadline = Instant::now() + Duration::from_millis(10);

        let answers = confirmed_by(deadline, sent).await;

        assert!(matches!(answers[0], Ok(Ok(Confirmation::Ack(None)))));
        assert!(answers[1].is_err(), "no answer by the deadline");
        assert!(matches!(answers[2], Ok(Err(_))));
        assert!(matches!(answers[3], Ok(Ok(Confirmation::Nack(None)))));
        assert_eq!(Instant::now(), deadline);
    }
}
