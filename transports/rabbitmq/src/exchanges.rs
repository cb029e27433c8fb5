//! Finding out, before publishing, whether an exchange exists.

use std::collections::HashSet;

use lapin::ExchangeKind;
use lapin::options::ExchangeDeclareOptions;
use lapin::types::FieldTable;
use tokio::sync::Mutex;

use crate::connection::Connector;
use crate::error::{Cause, cause};

/// The exchanges known to exist.
///
/// Publishing to a missing exchange makes the broker close the channel,
/// which costs the confirms of every other message in flight on it. A
/// passive declare on a throwaway channel finds a missing exchange first;
/// exchanges found are remembered until a publish to them fails.
#[derive(Default)]
pub(crate) struct KnownExchanges {
    known: Mutex<HashSet<String>>,
}

impl KnownExchanges {
    /// Which of `exchanges` are known not to exist. Exchanges that could
    /// not be checked count as existing, so the publish itself reports
    /// what is wrong.
    pub(crate) async fn missing<'a>(
        &self,
        connector: &Connector,
        exchanges: impl Iterator<Item = &'a String>,
    ) -> HashSet<String> {
        let unknown: HashSet<String> = {
            let known = self.known.lock().await;
            exchanges.filter(|e| !known.contains(*e)).cloned().collect()
        };
        let mut missing = HashSet::new();
        for exchange in unknown {
            match exists(connector, &exchange).await {
                Ok(true) => {
                    self.known.lock().await.insert(exchange);
                }
                Ok(false) => {
                    missing.insert(exchange);
                }
                Err(_) => {}
            }
        }
        missing
    }

    /// Forgets `exchange`, so the next publish to it checks again.
    pub(crate) async fn forget(&self, exchange: &str) {
        self.known.lock().await.remove(exchange);
    }
}

async fn exists(connector: &Connector, exchange: &str) -> Result<bool, lapin::Error> {
    if exchange.is_empty() {
        return Ok(true);
    }
    let ch = connector.channel().await?;
    let options = ExchangeDeclareOptions {
        passive: true,
        ..ExchangeDeclareOptions::default()
    };
    let declared = ch
        .exchange_declare(
            exchange.into(),
            ExchangeKind::Direct,
            options,
            FieldTable::default(),
        )
        .await;
    match declared {
        Ok(()) => {
            let _ = ch.close(200, "OK".into()).await;
            Ok(true)
        }
        Err(error) if matches!(cause(&error), Cause::NotFound(_)) => Ok(false),
        Err(error) => Err(error),
    }
}
