//! Reading every document a query returns.

use std::future::IntoFuture;

use futures::TryStreamExt;
use mongodb::Cursor;
use mongodb::action::Find;
use mongodb::bson::{Bson, Document};
use serde::de::DeserializeOwned;

use crate::filters;

/// Runs a find or an aggregation outside a session and reads all it
/// returns; the first error, of the query or of a later batch, ends it.
pub(crate) async fn read_all<T, Q>(query: Q) -> mongodb::error::Result<Vec<T>>
where
    Q: IntoFuture<Output = mongodb::error::Result<Cursor<T>>>,
    T: DeserializeOwned + Send + Sync + Unpin,
{
    query.await?.try_collect().await
}

/// The `_id`s of the documents a find outside a session returns, reading
/// nothing else of them.
pub(crate) async fn read_ids(find: Find<'_, Document>) -> mongodb::error::Result<Vec<Bson>> {
    let documents: Vec<Document> = read_all(find.projection(filters::id_only())).await?;
    Ok(documents
        .into_iter()
        .filter_map(|mut d| d.remove("_id"))
        .collect())
}
