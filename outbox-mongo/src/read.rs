//! Reading every document a query returns.

use std::future::IntoFuture;

use futures::TryStreamExt;
use mongodb::Cursor;
use serde::de::DeserializeOwned;

/// Runs a find or an aggregation outside a session and reads all it
/// returns; the first error, of the query or of a later batch, ends it.
pub(crate) async fn read_all<T, Q>(query: Q) -> mongodb::error::Result<Vec<T>>
where
    Q: IntoFuture<Output = mongodb::error::Result<Cursor<T>>>,
    T: DeserializeOwned + Send + Sync + Unpin,
{
    query.await?.try_collect().await
}
