//! Schema and table names: validated and quoted once, when a store is
//! built, so no statement ever splices unchecked input.

use tidings_core::StoreError;
use tidings_core::port::StoreNameRule;

/// The longest schema or table name accepted, in bytes. Both names together
/// form the notification channel `schema.table`, which must fit
/// PostgreSQL's 63-byte identifier limit.
pub const MAX_IDENTIFIER_LEN: usize = 31;

/// The validated names of one store's tables, ready to be put into SQL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TableNames {
    /// The bare schema name.
    pub(crate) schema: String,
    /// The bare outbox table name.
    pub(crate) outbox: String,
    /// The bare inbox table name.
    pub(crate) inbox: String,
}

impl TableNames {
    /// Checks every name; the error says which one is wrong and why.
    pub(crate) fn new(schema: &str, outbox: &str, inbox: &str) -> Result<Self, StoreError> {
        check("schema", schema)?;
        check_not_reserved(schema)?;
        check("outbox table", outbox)?;
        check("inbox table", inbox)?;
        if outbox == inbox {
            return Err(StoreError::Invalid(format!(
                "the outbox and inbox tables are both named {outbox:?}; give them different names"
            )));
        }
        if outbox.strip_suffix("_attempts") == Some(inbox) {
            return Err(StoreError::Invalid(format!(
                "the outbox table {outbox:?} would share its name with the inbox's _attempts table; give it another name"
            )));
        }
        if inbox
            .strip_prefix(outbox)
            .is_some_and(|rest| rest.starts_with("_slot_"))
        {
            return Err(StoreError::Invalid(format!(
                "the inbox table {inbox:?} would share its name with a slot of a rotated outbox {outbox:?}; give it another name"
            )));
        }
        for suffix in ["_migrations", "_claims", "_routes", "_positions"] {
            if inbox.strip_suffix(suffix) == Some(outbox) {
                return Err(StoreError::Invalid(format!(
                    "the inbox table {inbox:?} would share its name with the outbox's {suffix} table; give it another name"
                )));
            }
        }
        Ok(Self {
            schema: schema.to_owned(),
            outbox: outbox.to_owned(),
            inbox: inbox.to_owned(),
        })
    }

    /// The LISTEN/NOTIFY channel of the outbox table.
    pub(crate) fn channel(&self) -> String {
        format!("{}.{}", self.schema, self.outbox)
    }

    /// The advisory lock key text under which migrations of this schema run.
    pub(crate) fn migration_lock(&self) -> String {
        format!("tidings.migrate.{}", self.schema)
    }

    /// Fills the placeholders of a statement template: `{schema}`,
    /// `{outbox}`, `{inbox}`, `{inbox_attempts}`, `{migrations}`,
    /// `{claims}`, `{routes}` and `{positions}` become quoted,
    /// qualified names; `{outbox_table}` and `{inbox_table}` the bare table names, for
    /// naming indexes inside quotes.
    pub(crate) fn render(&self, template: &str) -> String {
        let schema = quote(&self.schema);
        let qualified = |table: &str| format!("{schema}.{}", quote(table));
        template
            .replace("{schema}", &schema)
            .replace("{outbox}", &qualified(&self.outbox))
            .replace("{inbox}", &qualified(&self.inbox))
            .replace("{inbox_attempts}", &qualified(&self.attempts_table()))
            .replace("{migrations}", &qualified(&self.migrations_table()))
            .replace("{claims}", &qualified(&self.claims_table()))
            .replace("{routes}", &qualified(&self.routes_table()))
            .replace("{positions}", &qualified(&self.positions_table()))
            .replace("{outbox_table}", &self.outbox)
            .replace("{inbox_table}", &self.inbox)
    }

    /// A quoted, schema-qualified name, as `to_regclass` takes it.
    pub(crate) fn qualified(&self, relation: &str) -> String {
        format!("{}.{}", quote(&self.schema), quote(relation))
    }

    /// The bare name of the table recording applied migrations.
    pub(crate) fn migrations_table(&self) -> String {
        format!("{}_migrations", self.outbox)
    }

    /// The bare name of the table counting the inbox's handler attempts
    /// that have not committed.
    pub(crate) fn attempts_table(&self) -> String {
        format!("{}_attempts", self.inbox)
    }

    /// The bare name of the table recording locked claims in progress.
    pub(crate) fn claims_table(&self) -> String {
        format!("{}_claims", self.outbox)
    }

    /// The bare name of the table recording every route staged.
    pub(crate) fn routes_table(&self) -> String {
        format!("{}_routes", self.outbox)
    }

    /// The bare name of the table recording where log-tailing relays'
    /// slots stand.
    pub(crate) fn positions_table(&self) -> String {
        format!("{}_positions", self.outbox)
    }
}

/// A name is 1 to [`MAX_IDENTIFIER_LEN`] bytes of lower-case ASCII letters,
/// digits and `_`, starting with a letter or `_`.
pub(crate) const RULE: StoreNameRule = StoreNameRule {
    max_len: MAX_IDENTIFIER_LEN,
    first: |c| c.is_ascii_lowercase() || c == '_',
    rest: |b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_',
    hint: "use lower-case ASCII letters, digits and '_', starting with a letter or '_'",
};

fn check(kind: &str, name: &str) -> Result<(), StoreError> {
    RULE.check(kind, name)
}

/// Refuses the schemas PostgreSQL keeps for itself: `information_schema`
/// and every name starting with `pg_` (`pg_catalog`, `pg_toast`, the
/// `pg_temp_N` schemas of temporary tables), which the server reserves.
/// Tables there could not be created, or would vanish with a session.
fn check_not_reserved(schema: &str) -> Result<(), StoreError> {
    if schema.starts_with("pg_") || schema == "information_schema" {
        return Err(StoreError::Invalid(format!(
            "schema name {schema:?} is invalid: PostgreSQL reserves it for system schemas \
             (information_schema and every name starting with pg_)"
        )));
    }
    Ok(())
}

/// Quotes a validated name. Validation already excludes `"`, so quoting only
/// keeps reserved words such as `order` usable.
fn quote(name: &str) -> String {
    format!("\"{name}\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_names_render_quoted() {
        let names = TableNames::new("shop", "outbox", "inbox").unwrap();
        assert_eq!(
            names.render("select * from {outbox} join {inbox} on true"),
            r#"select * from "shop"."outbox" join "shop"."inbox" on true"#
        );
        assert_eq!(
            names.render(r#"create index "{outbox_table}_claim_idx" on {outbox}"#),
            r#"create index "outbox_claim_idx" on "shop"."outbox""#
        );
        assert_eq!(
            names.render("{migrations}"),
            r#""shop"."outbox_migrations""#
        );
        assert_eq!(names.render("{claims}"), r#""shop"."outbox_claims""#);
        assert_eq!(
            names.render("{inbox_attempts}"),
            r#""shop"."inbox_attempts""#
        );
        assert_eq!(names.channel(), "shop.outbox");
    }

    #[test]
    fn hostile_names_are_rejected() {
        let long = "a".repeat(MAX_IDENTIFIER_LEN + 1);
        for bad in [
            "",
            "out\"box",
            "x; drop table y",
            "a b",
            "Outbox",
            "1st",
            "ünï",
            "a-b",
            long.as_str(),
        ] {
            let err = TableNames::new("public", bad, "inbox").unwrap_err();
            assert!(matches!(err, StoreError::Invalid(_)), "{bad:?}");
            assert!(err.to_string().contains("outbox table name"), "{err}");
            let err = TableNames::new(bad, "outbox", "inbox").unwrap_err();
            assert!(err.to_string().contains("schema name"), "{err}");
        }
    }

    #[test]
    fn system_schemas_are_reserved() {
        for reserved in [
            "pg_catalog",
            "pg_toast",
            "pg_temp_1",
            "pg_",
            "information_schema",
        ] {
            let err = TableNames::new(reserved, "outbox", "inbox").unwrap_err();
            assert!(matches!(err, StoreError::Invalid(_)), "{reserved:?}");
            assert!(err.to_string().contains("reserves"), "{err}");
        }
        for fine in ["pg", "pgx", "my_pg_catalog", "information"] {
            assert!(TableNames::new(fine, "outbox", "inbox").is_ok(), "{fine}");
        }
    }

    #[test]
    fn outbox_and_inbox_must_differ() {
        assert!(TableNames::new("public", "t", "t").is_err());
        assert!(TableNames::new("public", "t", "t_claims").is_err());
        assert!(TableNames::new("public", "t", "t_migrations").is_err());
        assert!(TableNames::new("public", "t_attempts", "t").is_err());
        assert!(TableNames::new("public", "t", "t_slot_0").is_err());
        assert!(TableNames::new("public", "t", "t_inbox").is_ok());
    }
}
