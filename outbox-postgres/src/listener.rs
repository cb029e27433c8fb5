//! The LISTEN side of the wake-up: staging commits NOTIFY the table's
//! channel, the listener wakes the relay.

use std::time::Duration;

use futures::future::BoxFuture;
use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgListener as SqlxListener, PgPoolOptions};
use tidings_core::lifecycle::{Step, StepError};
use tidings_core::{Backoff, Wakeup};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::announce::Registration;
use crate::audience::LOCK_SPACE;

/// Marks a listening session, so stores know their hints are heard.
const LISTENER_LOCK: &str = include_str!("../sql/hints/listener_lock.sql");
/// Unmarks it when the listener stops.
const LISTENER_UNLOCK: &str = include_str!("../sql/hints/listener_unlock.sql");
/// How long a stopping listener waits to give its lock back.
const WITHDRAW_TIMEOUT: Duration = Duration::from_secs(1);

/// Listens on a store's channel and calls [`Wakeup::wake`] on every
/// notification, so a relay claims within milliseconds of a commit. One
/// made by [`PgOutboxStore::wakeup_source`](crate::PgOutboxStore::wakeup_source) is
/// also woken directly by that store's commits in this process, and skips
/// their notifications when they arrive.
///
/// A hint only: notifications sent while the listener is disconnected are
/// lost, so it also wakes the relay whenever it (re)connects, and the
/// relay's polling floor covers the rest (for example behind a transaction
/// pooler, where LISTEN does not work). After the database restarts or drops
/// the connection it reconnects with exponential backoff.
///
/// While it listens it holds one of the pool's connections, and on it a
/// shared advisory lock keyed on the channel, by which stores see that
/// their hints are heard: a store sends none while no listener outside its
/// own process holds one.
#[derive(Debug)]
pub struct PgWakeupSource {
    source: Source,
    channel: String,
    wakeup: Wakeup,
    reconnect_backoff: Backoff,
    /// The hints of the store whose commits wake this listener directly.
    own: Option<OwnHints>,
}

/// Where a listener connects.
#[derive(Debug)]
pub(crate) enum Source {
    /// It takes one of the pool's connections.
    Pool(PgPool),
    /// It opens a connection of its own with these options: a direct one,
    /// where the pool goes through a transaction pooler.
    Direct(Box<PgConnectOptions>),
    /// Nowhere: behind a transaction pooler, with no direct connection
    /// given, it only keeps its place among the store's listeners woken
    /// at commit, and other processes' commits are found by polling.
    Nowhere,
}

/// Hints signed with `token` were delivered in process already.
#[derive(Debug)]
struct OwnHints {
    token: String,
    registration: Registration,
}

/// Why a listening session ended.
enum Ended {
    Cancelled,
    Lost(sqlx::Error),
    PoolClosed,
}

impl PgWakeupSource {
    /// The first key of the shared advisory lock a listening session
    /// holds; the second is `hashtext(channel)`. In `pg_locks` a listener
    /// shows as `locktype = 'advisory'`, `classid` this number, `objid`
    /// that hash and `objsubid = 2`.
    pub const PRESENCE_LOCK_SPACE: i32 = LOCK_SPACE;

    /// Default [`reconnect_backoff`](Self::reconnect_backoff): 100 ms, doubling up
    /// to 5 s.
    pub const DEFAULT_RECONNECT_BACKOFF: Backoff =
        Backoff::new(Duration::from_millis(100), Duration::from_secs(5));

    /// A listener on `channel`, taking its connection from `pool`. Usually
    /// made by [`PgOutboxStore::wakeup_source`](crate::PgOutboxStore::wakeup_source).
    pub fn new(pool: PgPool, channel: impl Into<String>, wakeup: Wakeup) -> Self {
        Self::from_source(Source::Pool(pool), channel.into(), wakeup)
    }

    /// A listener on `channel` connecting as `source` says.
    pub(crate) fn from_source(source: Source, channel: String, wakeup: Wakeup) -> Self {
        Self {
            source,
            channel,
            wakeup,
            reconnect_backoff: Self::DEFAULT_RECONNECT_BACKOFF,
            own: None,
        }
    }

    /// Ignores hints signed with `token`: the store that sends them wakes
    /// this listener directly while `registration` lives.
    pub(crate) fn skip_own_hints(mut self, token: String, registration: Registration) -> Self {
        self.own = Some(OwnHints {
            token,
            registration,
        });
        self
    }

    /// How long to wait between attempts to reconnect after the connection
    /// is lost; defaults to [`DEFAULT_RECONNECT_BACKOFF`](Self::DEFAULT_RECONNECT_BACKOFF).
    pub fn reconnect_backoff(mut self, backoff: Backoff) -> Self {
        self.reconnect_backoff = backoff;
        self
    }

    /// The [`reconnect_backoff`](Self::reconnect_backoff) setting.
    pub fn get_reconnect_backoff(&self) -> Backoff {
        self.reconnect_backoff
    }

    /// The channel listened on.
    pub fn channel(&self) -> &str {
        &self.channel
    }

    /// Runs [`listen`](Self::listen) on a new task.
    pub fn spawn(self, cancel: CancellationToken) -> JoinHandle<()> {
        tokio::spawn(async move { self.listen(cancel).await })
    }

    /// Listens until `cancel` fires or the pool is closed, reconnecting
    /// whenever the connection is lost. As a lifecycle [`Step`], the
    /// listener does the same.
    pub async fn listen(&self, cancel: CancellationToken) {
        if matches!(self.source, Source::Nowhere) {
            info!(
                channel = %self.channel,
                "behind a transaction pooler without listen_options: woken by this process's commits; \
                 other processes' are found by polling"
            );
            self.wakeup.wake();
            cancel.cancelled().await;
            return;
        }
        let mut failures = 0;
        loop {
            let delay = match self.session(&cancel, &mut failures).await {
                Ended::Cancelled => return,
                Ended::PoolClosed => {
                    info!(channel = %self.channel, "pool closed; listener stops");
                    return;
                }
                Ended::Lost(error) => {
                    // Counted after the session, which starts the count
                    // again once it connects.
                    failures += 1;
                    let delay = self.reconnect_backoff.delay(failures);
                    warn!(channel = %self.channel, %error, retry_in = ?delay, "listener connection lost");
                    delay
                }
            };
            // Whatever was committed while disconnected went unannounced.
            self.wakeup.wake();
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep(delay) => {}
            }
        }
    }

    /// Connects, listens and wakes on each notification until the
    /// connection fails or `cancel` fires. Once connected, `failures` counts
    /// again from none.
    async fn session(&self, cancel: &CancellationToken, failures: &mut u32) -> Ended {
        let connect = async {
            let mut listener = self.connect().await?;
            // Reconnect in this loop, with backoff, not inside sqlx.
            listener.eager_reconnect(false);
            listener.listen(&self.channel).await?;
            Ok::<_, sqlx::Error>(listener)
        };
        let mut listener = tokio::select! {
            _ = cancel.cancelled() => return Ended::Cancelled,
            connected = connect => match connected {
                Ok(listener) => listener,
                Err(error) => return ended(error),
            },
        };
        // Not raced with `cancel`, so the connection never goes back to
        // the pool holding the lock.
        if let Err(error) = self.announce_presence(&mut listener).await {
            return ended(error);
        }
        debug!(channel = %self.channel, "listening");
        *failures = 0;
        self.wakeup.wake();
        let ended = self.receive(&mut listener, cancel).await;
        if let Some(own) = &self.own {
            own.registration.listening_on(0);
        }
        if matches!(ended, Ended::Cancelled) {
            self.withdraw_presence(&mut listener).await;
        }
        ended
    }

    /// A connection ready to listen, from the pool or of its own.
    async fn connect(&self) -> Result<SqlxListener, sqlx::Error> {
        match &self.source {
            Source::Pool(pool) => SqlxListener::connect_with(pool).await,
            Source::Direct(options) => {
                // A pool of one, as sqlx's own `PgListener::connect` makes:
                // this loop, not the pool, decides when to reconnect.
                let pool = PgPoolOptions::new()
                    .max_connections(1)
                    .idle_timeout(None)
                    .max_lifetime(None)
                    .connect_lazy_with((**options).clone());
                let mut listener = SqlxListener::connect_with(&pool).await?;
                listener.ignore_pool_close_event(true);
                Ok(listener)
            }
            Source::Nowhere => Err(sqlx::Error::Configuration(
                "no connection to listen on".into(),
            )),
        }
    }

    /// Takes the shared lock by which stores see that this channel has a
    /// listener (see `audience.rs`), and tells this process's store which
    /// backend it is, so that store does not hint it.
    async fn announce_presence(&self, listener: &mut SqlxListener) -> Result<(), sqlx::Error> {
        let (locked, backend): (bool, i32) = sqlx::query_as(LISTENER_LOCK)
            .bind(LOCK_SPACE)
            .bind(&self.channel)
            .fetch_one(&mut *listener)
            .await?;
        if !locked {
            // Only an exclusive holder of the same key prevents it; stores
            // may then skip their hints, and the relay's polling covers it.
            warn!(channel = %self.channel, "listener presence lock not taken; hints may not arrive");
        }
        if let Some(own) = &self.own {
            own.registration.listening_on(backend);
        }
        Ok(())
    }

    /// Gives the presence lock back before the connection returns to the
    /// pool. Should that fail, stores merely keep sending hints.
    async fn withdraw_presence(&self, listener: &mut SqlxListener) {
        let unlock = sqlx::query(LISTENER_UNLOCK)
            .bind(LOCK_SPACE)
            .bind(&self.channel)
            .execute(&mut *listener);
        match tokio::time::timeout(WITHDRAW_TIMEOUT, unlock).await {
            Ok(Ok(_)) => {}
            Ok(Err(error)) => {
                debug!(channel = %self.channel, %error, "listener presence lock not given back")
            }
            Err(_) => {
                debug!(channel = %self.channel, "listener presence lock not given back in time")
            }
        }
    }

    /// Wakes on each notification until the connection fails or `cancel`
    /// fires.
    async fn receive(&self, listener: &mut SqlxListener, cancel: &CancellationToken) -> Ended {
        loop {
            let received = tokio::select! {
                _ = cancel.cancelled() => return Ended::Cancelled,
                received = listener.try_recv() => received,
            };
            match received {
                Ok(Some(notification)) => {
                    let own = self.own.as_ref();
                    if own.is_none_or(|own| own.token != notification.payload()) {
                        self.wakeup.wake();
                    }
                }
                Ok(None) => {
                    return Ended::Lost(sqlx::Error::Io(
                        std::io::ErrorKind::ConnectionAborted.into(),
                    ));
                }
                Err(error) => return ended(error),
            }
        }
    }
}

impl Step for PgWakeupSource {
    fn run(&self, cancel: CancellationToken) -> BoxFuture<'_, Result<(), StepError>> {
        Box::pin(async move {
            self.listen(cancel).await;
            Ok(())
        })
    }
}

fn ended(error: sqlx::Error) -> Ended {
    match error {
        sqlx::Error::PoolClosed => Ended::PoolClosed,
        error => Ended::Lost(error),
    }
}
