//! The claim statements, with their row limit written in, and the
//! `BEGIN` of a locked batch's transaction.
//!
//! With `limit $n`, PostgreSQL's generic plan for a claim assumes a tenth of
//! the table and always costs more than a plan made for the actual limit,
//! so every claim was planned afresh: a fifth to a quarter of the server's
//! time for a claim of 100 rows. With the limit a literal, the generic plan is
//! the right one and is kept. A relay claims with one limit, its batch
//! size, so each store renders a handful of statements at most.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use sqlx::postgres::PgArguments;
use sqlx::query::Query;
use sqlx::{AssertSqlSafe, Postgres, SqlSafeStr, SqlStr};
use tidings_core::{OrderingMode, OutboxRecord, Route};

use crate::claim::keys::KeyCursors;
use crate::names::TableNames;
use crate::params;
use crate::{ClaimMode, PgOutboxOptions};

/// Rendered statements kept per store; limits beyond these are rendered
/// on every claim rather than kept.
const KEPT: usize = 64;

/// The eight claim templates of a store (each of the two claims around
/// each of the four selections of claimable rows) and the statements
/// rendered from them so far.
#[derive(Debug, Clone)]
pub(crate) struct ClaimStatements {
    /// By [`Kind::index`], with the store's names filled in and `{limit}`
    /// open.
    templates: Arc<[String; 8]>,
    /// The places of a locked per-key claim (`gate.sql`, see
    /// [`PgOutboxOptions::per_key_claims`]), with the store's names filled
    /// in and `{places}` open.
    gate: Arc<str>,
    /// How many such claims may run at once.
    places: usize,
    rendered: Arc<Mutex<Vec<Rendered>>>,
}

/// A rendered claim: its kind, row limit, the slot it leaves out, and its
/// text.
type Rendered = (Kind, usize, Option<i16>, SqlStr);

/// Which claim: by ordering mode, clock and how the rows are held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Kind {
    per_key: bool,
    by_clock: bool,
    locked: bool,
}

impl Kind {
    fn of(route: &Route, mode: ClaimMode) -> Self {
        Self {
            per_key: route.ordering == OrderingMode::PerKey,
            by_clock: route.hlc_ordering,
            locked: mode == ClaimMode::Locked,
        }
    }

    /// Whether the claim starts past a cursor, binding it as `$2`: a
    /// locked claim of a route in staging order, one that
    /// [fits](tidings_core::ClaimCursor::fits) a cursor. Leased claims
    /// take their rows out of the claim index, so nothing is left for a
    /// cursor to skip.
    fn takes_cursor(self) -> bool {
        self.locked && !self.per_key && !self.by_clock
    }

    /// Whether the claim walks the route's keys from a key cursor, binding
    /// it after its other parameters: a per-key claim in staging order
    /// (`claimable_per_key.sql`).
    fn walks_keys(self) -> bool {
        self.per_key && !self.by_clock
    }

    /// The position of the kind's template.
    fn index(self) -> usize {
        usize::from(self.per_key) * 2 + usize::from(self.by_clock) + usize::from(self.locked) * 4
    }
}

impl ClaimStatements {
    pub(crate) fn new(names: &TableNames) -> Self {
        let selections = [
            include_str!("../../sql/claim/claimable.sql"),
            include_str!("../../sql/claim/claimable_hlc.sql"),
            include_str!("../../sql/claim/claimable_per_key.sql"),
            include_str!("../../sql/claim/claimable_per_key_hlc.sql"),
        ];
        let claims = [
            include_str!("../../sql/claim/claim.sql"),
            include_str!("../../sql/claim/claim_locked.sql"),
        ];
        let templates = std::array::from_fn(|index| {
            let selection = selections[index % 4];
            let claim = claims[index / 4];
            names.render(&claim.replace("{claimable}", &without_heading(selection)))
        });
        let gate = names.render(include_str!("../../sql/claim/gate.sql"));
        Self {
            templates: Arc::new(templates),
            gate: without_heading(&gate).into(),
            places: PgOutboxOptions::DEFAULT_PER_KEY_CLAIMS,
            rendered: Arc::default(),
        }
    }

    /// These statements with at most `places` locked claims of a per-key
    /// route at once.
    pub(crate) fn per_key_claims(mut self, places: usize) -> Self {
        self.places = places.max(1);
        self
    }

    /// The claim of at most `limit` rows for `route`'s ordering mode,
    /// leaving slot `skip` of a rotated outbox out of its plan. A leased
    /// claim binds the route name, the lease token, the lease in
    /// microseconds and whether the route is per key; a locked one (`mode`
    /// [`ClaimMode::Locked`]) the route name only.
    pub(crate) fn get(
        &self,
        route: &Route,
        limit: usize,
        mode: ClaimMode,
        skip: Option<i16>,
    ) -> SqlStr {
        self.render(Kind::of(route, mode), limit, skip)
    }

    /// The locked claim of at most `limit` rows for `route`, leaving slot
    /// `skip` out; it binds what [`locked_claim`] binds.
    pub(crate) fn locked(&self, route: &Route, limit: usize, skip: Option<i16>) -> SqlStr {
        self.render(Kind::of(route, ClaimMode::Locked), limit, skip)
    }

    fn render(&self, kind: Kind, limit: usize, skip: Option<i16>) -> SqlStr {
        let mut rendered = self.rendered.lock().unwrap_or_else(|e| e.into_inner());
        let key = (kind, limit, skip);
        if let Some((.., sql)) = rendered.iter().find(|(k, l, s, _)| (*k, *l, *s) == key) {
            return sql.clone();
        }
        let written = params::limit(limit).to_string();
        let after = match kind.takes_cursor() {
            true => "and r.id + 0 > $2",
            false => "",
        };
        // The key cursor follows the claim's other parameters: the route's
        // name alone in a locked claim, four in a leased one.
        let key_after = match kind.locked {
            true => "$2",
            false => "$5",
        };
        // Only a locked claim's places outlast its statement.
        let gate = match kind.locked && kind.per_key {
            true => self.gate.replace("{places}", &self.places.to_string()),
            false => "true".to_owned(),
        };
        let mut text = self.templates[kind.index()]
            .replace("{limit}", &written)
            .replace("{after}", after)
            .replace("{key_after}", key_after)
            .replace("{gate}", &gate);
        let skips = [
            ("{skip}", "r"),
            ("{skip_target}", "o"),
            ("{skip_o}", "o"),
            ("{skip_h}", "h"),
            ("{skip_x}", "x"),
        ];
        for (placeholder, alias) in skips {
            let filter = skip.map_or(String::new(), |slot| format!("and {alias}.slot <> {slot}"));
            text = text.replace(placeholder, &filter);
        }
        // Safe: besides the store's validated, quoted names, the only text
        // written in is the decimal digits of integers.
        let sql = AssertSqlSafe(text).into_sql_str();
        if rendered.len() < KEPT {
            rendered.push((kind, limit, skip, sql.clone()));
        }
        sql
    }
}

/// Where a claim starts, as its statement binds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ClaimFrom {
    /// From the oldest row; nothing to bind.
    Oldest,
    /// Past a row id (the lowest `bigint` for the oldest row): a locked
    /// claim of a route in staging order.
    Row(i64),
    /// Past an ordering key (the empty string for the first): a per-key
    /// claim in staging order, which walks the keys.
    Key(String),
}

impl ClaimFrom {
    /// Where a claim of `route` in `mode` starts: past the row cursor
    /// `after` where the claim takes one, past the route's key cursor in
    /// `keys` where it walks the keys.
    pub(crate) fn of(
        route: &Route,
        mode: ClaimMode,
        after: Option<i64>,
        keys: &KeyCursors,
    ) -> Self {
        let kind = Kind::of(route, mode);
        if kind.takes_cursor() {
            ClaimFrom::Row(after.unwrap_or(i64::MIN))
        } else if kind.walks_keys() {
            ClaimFrom::Key(keys.start(&route.name))
        } else {
            ClaimFrom::Oldest
        }
    }

    /// Moves the route's key cursor in `keys` past a claim of at most
    /// `limit` that started here and took `records`; nothing for a claim
    /// that did not walk the keys.
    pub(crate) fn advance(
        &self,
        keys: &KeyCursors,
        route: &Route,
        records: &[OutboxRecord],
        limit: usize,
    ) {
        if let ClaimFrom::Key(from) = self {
            keys.advance(&route.name, from, records, limit);
        }
    }

    /// `query` with the start bound after its other parameters.
    pub(crate) fn bind<'q>(
        self,
        query: Query<'q, Postgres, PgArguments>,
    ) -> Query<'q, Postgres, PgArguments> {
        match self {
            ClaimFrom::Oldest => query,
            ClaimFrom::Row(after) => query.bind(after),
            ClaimFrom::Key(key) => query.bind(key),
        }
    }
}

/// A locked claim `sql` ([`ClaimStatements::locked`]) of `route`, bound:
/// the route's name, then where the claim starts. Rows come back in the
/// binary format, which costs the server less to write and the relay less
/// to read than text.
pub(crate) fn locked_claim(
    sql: SqlStr,
    route: &Route,
    from: ClaimFrom,
) -> Query<'_, Postgres, PgArguments> {
    from.bind(sqlx::query(sql).bind(&route.name))
}

/// Opens a locked batch's transaction and bounds how long it may sit idle
/// (between statements, as while the batch is published) by the lease, so
/// a hung relay gives its rows back. The only text written in is the
/// decimal digits of an integer.
pub(crate) fn begin_statement(lease: Duration) -> String {
    let millis = i32::try_from(lease.as_millis()).unwrap_or(i32::MAX).max(1);
    format!("begin; set local idle_in_transaction_session_timeout = {millis}")
}

/// A selection without the comment lines that head its file.
fn without_heading(selection: &str) -> String {
    let body: Vec<&str> = selection
        .lines()
        .skip_while(|line| line.starts_with("--"))
        .collect();
    body.join("\n")
}

#[cfg(test)]
mod tests;
