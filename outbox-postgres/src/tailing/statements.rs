//! The statements of log tailing, rendered once per store.

use sqlx::{AssertSqlSafe, SqlSafeStr, SqlStr};

use super::{TailMode, Tailing};
use crate::names::TableNames;

/// The statements of log tailing, rendered once; those of the reader and
/// its settling are read only with the `wal` feature.
#[derive(Debug, Clone)]
#[cfg_attr(not(feature = "wal"), allow(dead_code))]
pub(crate) struct TailStatements {
    pub(crate) wal_level: SqlStr,
    pub(crate) publication_found: SqlStr,
    pub(crate) create_publication: SqlStr,
    pub(crate) create_slot: SqlStr,
    pub(crate) slot_state: SqlStr,
    pub(crate) position: SqlStr,
    pub(crate) record_position: SqlStr,
    pub(crate) reset_position: SqlStr,
    pub(crate) session_started: SqlStr,
    pub(crate) in_flight_add: SqlStr,
    pub(crate) in_flight_remove: SqlStr,
    pub(crate) first_position: SqlStr,
    pub(crate) restage_pending: SqlStr,
    pub(crate) emit: SqlStr,
    pub(crate) published_delete: SqlStr,
    pub(crate) published_keep: SqlStr,
    pub(crate) fail_rows: SqlStr,
    pub(crate) fail_events: SqlStr,
    pub(crate) requeue_take: SqlStr,
    pub(crate) requeue_reinsert: SqlStr,
}

impl TailStatements {
    pub(crate) fn new(names: &TableNames, tailing: &Tailing) -> Self {
        let sql = |template: &str| -> SqlStr {
            // Safe: the only text spliced in is the validated, quoted
            // identifiers of `names` and the validated publication name;
            // every value is a bind parameter.
            let template =
                template.replace("{publication}", &format!("\"{}\"", tailing.publication));
            AssertSqlSafe(names.render(&template)).into_sql_str()
        };
        let create_publication = match tailing.mode {
            TailMode::Table => include_str!("../../sql/tailing/create_publication_table.sql"),
            TailMode::Messages => include_str!("../../sql/tailing/create_publication_messages.sql"),
        };
        Self {
            wal_level: sql(include_str!("../../sql/tailing/wal_level.sql")),
            publication_found: sql(include_str!("../../sql/tailing/publication_found.sql")),
            create_publication: sql(create_publication),
            create_slot: sql(include_str!("../../sql/tailing/create_slot.sql")),
            slot_state: sql(include_str!("../../sql/tailing/slot_state.sql")),
            position: sql(include_str!("../../sql/tailing/position.sql")),
            record_position: sql(include_str!("../../sql/tailing/record_position.sql")),
            reset_position: sql(include_str!("../../sql/tailing/reset_position.sql")),
            session_started: sql(include_str!("../../sql/tailing/session_started.sql")),
            in_flight_add: sql(include_str!("../../sql/tailing/in_flight_add.sql")),
            in_flight_remove: sql(include_str!("../../sql/tailing/in_flight_remove.sql")),
            first_position: sql(include_str!("../../sql/tailing/first_position.sql")),
            restage_pending: sql(include_str!("../../sql/tailing/restage_pending.sql")),
            emit: sql(include_str!("../../sql/tailing/emit.sql")),
            published_delete: sql(include_str!("../../sql/tailing/published_delete.sql")),
            published_keep: sql(include_str!("../../sql/tailing/published_keep.sql")),
            fail_rows: sql(include_str!("../../sql/tailing/fail_rows.sql")),
            fail_events: sql(include_str!("../../sql/tailing/fail_events.sql")),
            requeue_take: sql(include_str!("../../sql/tailing/requeue_take.sql")),
            requeue_reinsert: sql(include_str!("../../sql/tailing/requeue_reinsert.sql")),
        }
    }
}
