//! Every statement the store runs, one per file under `sql/`, rendered once
//! with the store's validated table names.

use sqlx::{AssertSqlSafe, SqlSafeStr, SqlStr};

use crate::claim::statements::ClaimStatements;
use crate::layout::{self, Layout, MAX_MOVED, SLOTS};
use crate::names::TableNames;

/// One versioned migration: applied once per outbox table, in version
/// order, and recorded in the outbox's `<table>_migrations`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Migration {
    /// Its version; versions only ever grow.
    pub(crate) version: i32,
    /// What it does, recorded with the version.
    pub(crate) name: &'static str,
    /// Which table it builds.
    pub(crate) target: Target,
    /// The one layout it belongs to, or `None` for every layout.
    pub(crate) layout: Option<Layout>,
    /// The statement template.
    template: &'static str,
}

/// The table a migration builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// The outbox table and its companions, which belong to one store.
    Outbox,
    /// The inbox table, which several outbox tables of a schema may share
    /// (they all default to `tidings_inbox`). Each outbox records its own
    /// migrations, so an inbox migration may find its work done by another
    /// outbox's: it is written to do nothing then (`if not exists`), and
    /// `migrate` first checks that what already stands under the inbox's
    /// names is the inbox, not an unrelated table.
    Inbox,
}

macro_rules! migration {
    ($version:literal, $name:literal, $target:ident) => {
        migration!($version, $name, $target, None)
    };
    ($version:literal, $name:literal, $target:ident, $layout:expr) => {
        Migration {
            version: $version,
            name: $name,
            target: Target::$target,
            layout: $layout,
            template: include_str!(concat!("../sql/migrations/", $name, ".sql")),
        }
    };
}

/// Every migration, oldest first.
pub(crate) const MIGRATIONS: &[Migration] = &[
    migration!(1, "0001_outbox_table", Outbox),
    migration!(2, "0002_outbox_claim_index", Outbox),
    migration!(3, "0003_outbox_lease_index", Outbox),
    migration!(4, "0004_outbox_key_index", Outbox),
    migration!(5, "0005_outbox_key_lock_index", Outbox),
    migration!(6, "0006_outbox_finished_index", Outbox),
    migration!(7, "0007_inbox_table", Inbox),
    migration!(8, "0008_inbox_age_index", Inbox),
    migration!(9, "0009_outbox_claim_index_drop", Outbox),
    migration!(10, "0010_outbox_claim_index_by_position", Outbox),
    migration!(11, "0011_outbox_claims_table", Outbox),
    migration!(12, "0012_inbox_attempts_table", Inbox),
    migration!(13, "0013_inbox_attempts_age_index", Inbox),
    migration!(14, "0014_outbox_rotated", Outbox, Some(Layout::Rotated)),
    migration!(15, "0015_outbox_claims_ranges", Outbox),
    migration!(16, "0016_outbox_routes_table", Outbox),
    migration!(17, "0017_outbox_positions_table", Outbox),
    migration!(18, "0018_outbox_expires_at", Outbox),
];

impl Migration {
    /// Whether a store of `layout` applies it.
    fn belongs_to(&self, layout: Layout) -> bool {
        self.layout.is_none_or(|only| only == layout)
    }
}

/// The schema version a store of `layout` needs: its newest migration's.
pub(crate) fn schema_version(layout: Layout) -> i32 {
    MIGRATIONS
        .iter()
        .filter(|m| m.belongs_to(layout))
        .map(|m| m.version)
        .max()
        .unwrap_or(0)
}

/// The statements that truncate one slot of a rotated outbox.
#[derive(Debug, Clone)]
pub(crate) struct SlotStatements {
    /// The slot's partition, quoted and qualified.
    pub(crate) partition: String,
    pub(crate) lock: SqlStr,
    pub(crate) live: SqlStr,
    pub(crate) moved: SqlStr,
    pub(crate) truncate: SqlStr,
}

/// The rendered statements of one store.
#[derive(Debug, Clone)]
pub(crate) struct Statements {
    pub(crate) migrations: Vec<(Migration, SqlStr)>,
    pub(crate) migrate_lock: SqlStr,
    pub(crate) schema_exists: SqlStr,
    pub(crate) create_schema: SqlStr,
    pub(crate) create_migrations: SqlStr,
    pub(crate) applied_migrations: SqlStr,
    pub(crate) record_migration: SqlStr,
    pub(crate) find_relations: SqlStr,
    pub(crate) inbox_found: SqlStr,
    pub(crate) schema_version: SqlStr,
    pub(crate) outbox_rotated: SqlStr,
    pub(crate) rotate_slots: SqlStr,
    pub(crate) rotate_size: SqlStr,
    /// Per slot, for a rotated outbox; empty for a plain one.
    pub(crate) slots: Vec<SlotStatements>,
    pub(crate) stage: SqlStr,
    pub(crate) stage_one: SqlStr,
    pub(crate) stage_one_fresh: SqlStr,
    pub(crate) record_routes: SqlStr,
    pub(crate) announce: SqlStr,
    pub(crate) listeners: SqlStr,
    pub(crate) claim: ClaimStatements,
    pub(crate) settle: SqlStr,
    pub(crate) settle_published: SqlStr,
    pub(crate) settle_published_kept: SqlStr,
    pub(crate) claim_record: SqlStr,
    pub(crate) claim_release: SqlStr,
    pub(crate) set_aside: SqlStr,
    pub(crate) claims_expired: SqlStr,
    pub(crate) claims_pending: SqlStr,
    pub(crate) claims_trim: SqlStr,
    pub(crate) count_crashes: SqlStr,
    pub(crate) settle_locked: SqlStr,
    pub(crate) settle_locked_published: SqlStr,
    pub(crate) settle_locked_published_kept: SqlStr,
    pub(crate) sweep: SqlStr,
    pub(crate) requeue: SqlStr,
    pub(crate) tailed_by: SqlStr,
    pub(crate) purge: SqlStr,
    pub(crate) delete_failed: SqlStr,
    pub(crate) stats: SqlStr,
    pub(crate) routes: SqlStr,
    pub(crate) failed_rows: SqlStr,
    pub(crate) purge_count: SqlStr,
    pub(crate) inbox_consumers: SqlStr,
    pub(crate) mark_age: SqlStr,
    pub(crate) inbox_mark: SqlStr,
    pub(crate) inbox_purge: SqlStr,
    pub(crate) inbox_attempts: SqlStr,
    pub(crate) inbox_attempt_start: SqlStr,
    pub(crate) inbox_attempt_finish: SqlStr,
    pub(crate) inbox_attempt_clear: SqlStr,
}

impl Statements {
    /// Renders every template with `names`, for an outbox of `layout`.
    pub(crate) fn new(names: &TableNames, layout: Layout) -> Self {
        let (unstored_rows, unstored_one) = match layout {
            Layout::Plain => ("true", "true"),
            Layout::Rotated => (
                "not exists (select 1 from {outbox} as d \
                 where d.route = e.route and d.event_id = e.event_id)",
                "not exists (select 1 from {outbox} as d \
                 where d.route = $2::text and d.event_id = $1::uuid)",
            ),
        };
        let sql = |template: &str| -> SqlStr {
            // Safe: the only text spliced in is the validated, quoted
            // identifiers of `names` and integers of this crate; every
            // value is a bind parameter.
            let template = template
                .replace("{unstored_rows}", unstored_rows)
                .replace("{unstored_one}", unstored_one)
                .replace("{current_slot}", &layout::current_slot_sql())
                .replace("{slots}", &SLOTS.to_string())
                .replace("{max_moved}", &MAX_MOVED.to_string());
            AssertSqlSafe(names.render(&template)).into_sql_str()
        };
        let slot = |slot: i16| {
            let partition = names.qualified(&layout::partition(&names.outbox, slot));
            let sql = |template: &str| {
                sql(&template
                    .replace("{partition}", &partition)
                    .replace("{slot}", &slot.to_string()))
            };
            SlotStatements {
                lock: sql(include_str!("../sql/rotate/rotate_lock.sql")),
                live: sql(include_str!("../sql/rotate/rotate_live.sql")),
                moved: sql(include_str!("../sql/rotate/rotate_move.sql")),
                truncate: sql(include_str!("../sql/rotate/rotate_truncate.sql")),
                partition,
            }
        };
        let slots = match layout {
            Layout::Plain => Vec::new(),
            Layout::Rotated => (0..SLOTS).map(slot).collect(),
        };
        Self {
            migrations: MIGRATIONS
                .iter()
                .filter(|m| m.belongs_to(layout))
                .map(|m| (*m, sql(m.template)))
                .collect(),
            outbox_rotated: sql(include_str!("../sql/schema/outbox_rotated.sql")),
            rotate_slots: sql(include_str!("../sql/rotate/rotate_slots.sql")),
            rotate_size: sql(include_str!("../sql/rotate/rotate_size.sql")),
            slots,
            migrate_lock: sql(include_str!("../sql/schema/migrate_lock.sql")),
            schema_exists: sql(include_str!("../sql/schema/schema_exists.sql")),
            create_schema: sql(include_str!("../sql/schema/create_schema.sql")),
            create_migrations: sql(include_str!("../sql/schema/create_migrations.sql")),
            applied_migrations: sql(include_str!("../sql/schema/applied_migrations.sql")),
            record_migration: sql(include_str!("../sql/schema/record_migration.sql")),
            find_relations: sql(include_str!("../sql/schema/find_relations.sql")),
            inbox_found: sql(include_str!("../sql/schema/inbox_found.sql")),
            schema_version: sql(include_str!("../sql/schema/schema_version.sql")),
            stage: sql(include_str!("../sql/stage/stage.sql")),
            stage_one: sql(include_str!("../sql/stage/stage_one.sql")),
            stage_one_fresh: sql(include_str!("../sql/stage/stage_one_fresh.sql")),
            record_routes: sql(include_str!("../sql/stage/record_routes.sql")),
            announce: sql(include_str!("../sql/hints/announce.sql")),
            listeners: sql(include_str!("../sql/hints/listeners.sql")),
            claim: ClaimStatements::new(names),
            settle: sql(include_str!("../sql/settle/settle.sql")),
            settle_published: sql(include_str!("../sql/settle/settle_published.sql")),
            settle_published_kept: sql(include_str!("../sql/settle/settle_published_kept.sql")),
            claim_record: sql(include_str!("../sql/claim/claim_record.sql")),
            claim_release: sql(include_str!("../sql/claim/claim_release.sql")),
            set_aside: sql(include_str!("../sql/claim/set_aside.sql")),
            claims_expired: sql(include_str!("../sql/sweep/claims_expired.sql")),
            claims_pending: sql(include_str!("../sql/sweep/claims_pending.sql")),
            claims_trim: sql(include_str!("../sql/sweep/claims_trim.sql")),
            count_crashes: sql(include_str!("../sql/sweep/count_crashes.sql")),
            settle_locked: sql(include_str!("../sql/settle/settle_locked.sql")),
            settle_locked_published: sql(include_str!("../sql/settle/settle_locked_published.sql")),
            settle_locked_published_kept: sql(include_str!(
                "../sql/settle/settle_locked_published_kept.sql"
            )),
            sweep: sql(include_str!("../sql/sweep/sweep.sql")),
            requeue: sql(include_str!("../sql/admin/requeue.sql")),
            tailed_by: sql(include_str!("../sql/tailing/tailed_by.sql")),
            purge: sql(include_str!("../sql/admin/purge.sql")),
            delete_failed: sql(include_str!("../sql/admin/delete_failed.sql")),
            stats: sql(include_str!("../sql/admin/stats.sql")),
            routes: sql(include_str!("../sql/admin/routes.sql")),
            failed_rows: sql(include_str!("../sql/admin/failed_rows.sql")),
            purge_count: sql(include_str!("../sql/admin/purge_count.sql")),
            inbox_consumers: sql(include_str!("../sql/inbox/inbox_consumers.sql")),
            mark_age: sql(include_str!("../sql/admin/mark_age.sql")),
            inbox_mark: sql(include_str!("../sql/inbox/inbox_mark.sql")),
            inbox_purge: sql(include_str!("../sql/inbox/inbox_purge.sql")),
            inbox_attempts: sql(include_str!("../sql/inbox/inbox_attempts.sql")),
            inbox_attempt_start: sql(include_str!("../sql/inbox/inbox_attempt_start.sql")),
            inbox_attempt_finish: sql(include_str!("../sql/inbox/inbox_attempt_finish.sql")),
            inbox_attempt_clear: sql(include_str!("../sql/inbox/inbox_attempt_clear.sql")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_grow_and_name_their_files() {
        assert!(MIGRATIONS.windows(2).all(|w| w[0].version < w[1].version));
        for m in MIGRATIONS {
            assert!(
                m.name.starts_with(&format!("{:04}_", m.version)),
                "{}",
                m.name
            );
        }
    }

    #[test]
    fn inbox_migrations_do_nothing_where_another_outbox_applied_them() {
        for m in MIGRATIONS.iter().filter(|m| m.target == Target::Inbox) {
            assert!(m.name.contains("_inbox_"), "{}", m.name);
            assert!(m.template.contains("if not exists"), "{}", m.name);
        }
    }

    #[test]
    fn every_placeholder_is_filled() {
        let names = TableNames::new("s", "o", "i").unwrap();
        let all = Statements::new(&names, Layout::Rotated);
        let mut texts = vec![
            all.stage.as_str(),
            all.stage_one.as_str(),
            all.stage_one_fresh.as_str(),
            all.record_routes.as_str(),
            all.routes.as_str(),
            all.mark_age.as_str(),
            all.settle.as_str(),
            all.settle_published.as_str(),
            all.settle_published_kept.as_str(),
            all.settle_locked.as_str(),
            all.claim_record.as_str(),
            all.claim_release.as_str(),
            all.set_aside.as_str(),
            all.claims_expired.as_str(),
            all.claims_trim.as_str(),
            all.count_crashes.as_str(),
            all.settle_locked_published.as_str(),
            all.settle_locked_published_kept.as_str(),
            all.listeners.as_str(),
            all.stats.as_str(),
            all.inbox_purge.as_str(),
            all.inbox_attempts.as_str(),
            all.inbox_attempt_start.as_str(),
            all.inbox_attempt_finish.as_str(),
            all.inbox_attempt_clear.as_str(),
        ];
        texts.extend(all.migrations.iter().map(|(_, s)| s.as_str()));
        for slot in &all.slots {
            texts.extend([&slot.lock, &slot.live, &slot.moved, &slot.truncate].map(|s| s.as_str()));
        }
        texts.push(all.rotate_slots.as_str());
        for text in texts {
            for placeholder in [
                "{outbox",
                "{inbox",
                "{schema}",
                "{migrations}",
                "{claims}",
                "{routes}",
                "{unstored",
                "{current_slot}",
                "{slot",
                "{partition}",
                "{max_moved}",
            ] {
                assert!(!text.contains(placeholder), "{text}");
            }
        }
    }
}
