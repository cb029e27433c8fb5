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
use tidings_core::{OrderingMode, Route};

use crate::ClaimMode;
use crate::names::TableNames;
use crate::params;

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
        Self {
            templates: Arc::new(templates),
            rendered: Arc::default(),
        }
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
        let (skip_rows, skip_target) = match skip {
            Some(slot) => (
                format!("and r.slot <> {slot}"),
                format!("and o.slot <> {slot}"),
            ),
            None => (String::new(), String::new()),
        };
        let after = match kind.takes_cursor() {
            true => "and r.id + 0 > $2",
            false => "",
        };
        let text = self.templates[kind.index()]
            .replace("{limit}", &written)
            .replace("{after}", after)
            .replace("{skip}", &skip_rows)
            .replace("{skip_target}", &skip_target);
        // Safe: besides the store's validated, quoted names, the only text
        // written in is the decimal digits of integers.
        let sql = AssertSqlSafe(text).into_sql_str();
        if rendered.len() < KEPT {
            rendered.push((kind, limit, skip, sql.clone()));
        }
        sql
    }
}

/// A locked claim `sql` ([`ClaimStatements::locked`]) of `route`, bound:
/// the route's name, then, for a route that takes a cursor, the row id
/// `after` which the claim starts (the lowest `bigint` to start from the
/// oldest row). Rows come back in the binary format, which costs the
/// server less to write and the relay less to read than text.
pub(crate) fn locked_claim<'q>(
    sql: SqlStr,
    route: &'q Route,
    after: Option<i64>,
) -> Query<'q, Postgres, PgArguments> {
    let query = sqlx::query(sql).bind(&route.name);
    match after {
        Some(after) => query.bind(after),
        None => query,
    }
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
mod tests {
    use tidings_core::{ClaimCursor, OutboxSpec};

    use super::*;

    static EVENTS: OutboxSpec<u32> = OutboxSpec::json("events").to_queue("q");

    #[test]
    fn the_limit_is_written_in_and_every_placeholder_filled() {
        let names = TableNames::new("s", "o", "i").expect("valid names");
        let claims = ClaimStatements::new(&names);
        let route = EVENTS.route();
        let sql = claims.get(route, 250, ClaimMode::Leased, None);
        assert!(sql.as_str().contains("limit 250"), "{}", sql.as_str());
        assert!(!sql.as_str().contains('{'), "{}", sql.as_str());
        assert!(!sql.as_str().contains("slot"), "{}", sql.as_str());
        assert_eq!(
            claims.get(route, 250, ClaimMode::Leased, None).as_str(),
            sql.as_str()
        );
        let skipping = claims.get(route, 250, ClaimMode::Leased, Some(2));
        assert!(skipping.as_str().contains("and r.slot <> 2"));
        assert!(skipping.as_str().contains("and o.slot <> 2"));
        let locked = claims.locked(route, 250, Some(3));
        assert!(locked.as_str().contains("and r.slot <> 3"));
        assert!(locked.as_str().contains("and r.id + 0 > $2"));
        assert!(!sql.as_str().contains("r.id + 0 >"), "{}", sql.as_str());
        assert!(Kind::of(route, ClaimMode::Locked).takes_cursor());
        assert!(!Kind::of(route, ClaimMode::Leased).takes_cursor());
        assert_eq!(
            Kind::of(route, ClaimMode::Locked).takes_cursor(),
            ClaimCursor::fits(route)
        );
        let largest = claims.get(route, usize::MAX, ClaimMode::Leased, None);
        assert!(largest.as_str().contains(&format!("limit {}\n", i64::MAX)));
        for limit in 0..2 * KEPT {
            assert!(
                claims
                    .get(route, limit, ClaimMode::Leased, None)
                    .as_str()
                    .contains(&format!("limit {limit}\n"))
            );
        }
    }

    #[test]
    fn the_idle_bound_is_the_lease_in_whole_milliseconds() {
        let sql = begin_statement;
        assert_eq!(
            sql(Duration::from_secs(30)),
            "begin; set local idle_in_transaction_session_timeout = 30000"
        );
        assert!(sql(Duration::ZERO).ends_with("= 1"));
        assert!(sql(Duration::MAX).ends_with(&format!("= {}", i32::MAX)));
    }

    #[test]
    fn each_claim_is_written_around_each_selection() {
        let names = TableNames::new("s", "o", "i").expect("valid names");
        let claims = ClaimStatements::new(&names);
        for (index, template) in claims.templates.iter().enumerate() {
            let sql = template
                .replace("{limit}", "7")
                .replace("{after}", "")
                .replace("{skip}", "")
                .replace("{skip_target}", "");
            assert!(!sql.contains('{'), "{sql}");
            assert!(
                sql.contains("limit 7\nfor update of r skip locked"),
                "{sql}"
            );
            assert_eq!(sql.contains("with picked"), index < 4, "{sql}");
            assert_eq!(sql.contains("not exists"), index % 4 >= 2, "{sql}");
            assert_eq!(sql.contains("r.hlc nulls first"), index % 2 == 1, "{sql}");
            // The selection's heading stays out; only the claim's own heads it.
            let headings = ["-- The rows a claim takes", "-- As claimable"];
            let inner = sql
                .lines()
                .filter(|l| headings.iter().any(|h| l.starts_with(h)));
            assert_eq!(inner.count(), 0, "{sql}");
        }
    }
}
