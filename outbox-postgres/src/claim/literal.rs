//! Values written into the text of a statement, for the few statements
//! sent in the simple protocol, which takes no parameters. Each is written
//! so that the server reads back exactly the value, whatever its text.

use std::fmt::Write;

use tidings_core::StoreError;
use uuid::Uuid;

/// `value` as an escape string constant (`E'..'`): quotes doubled and
/// backslashes escaped, which reads the same whatever the server's
/// `standard_conforming_strings`. Text holding a NUL character, which no
/// PostgreSQL text can, is refused.
pub(crate) fn text(value: &str) -> Result<String, StoreError> {
    if value.contains('\0') {
        return Err(StoreError::Invalid(format!(
            "{value:?} holds a NUL character, which PostgreSQL text cannot"
        )));
    }
    let mut literal = String::with_capacity(value.len() + 3);
    literal.push_str("E'");
    for c in value.chars() {
        match c {
            '\'' => literal.push_str("''"),
            '\\' => literal.push_str("\\\\"),
            c => literal.push(c),
        }
    }
    literal.push('\'');
    Ok(literal)
}

/// `value` as a `uuid` constant.
pub(crate) fn uuid(value: Uuid) -> String {
    format!("'{value}'::uuid")
}

/// `values` as a `bigint[]` constant.
pub(crate) fn bigints(values: &[i64]) -> String {
    let mut literal = String::with_capacity(values.len() * 8 + 16);
    literal.push_str("'{");
    for (i, value) in values.iter().enumerate() {
        if i > 0 {
            literal.push(',');
        }
        // Writing into a String cannot fail.
        let _ = write!(literal, "{value}");
    }
    literal.push_str("}'::bigint[]");
    literal
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_escapes_quotes_and_backslashes() {
        assert_eq!(text("orders").unwrap(), "E'orders'");
        assert_eq!(text("it's").unwrap(), "E'it''s'");
        assert_eq!(text(r"a\'); drop").unwrap(), r"E'a\\''); drop'");
        assert_eq!(text("ünï").unwrap(), "E'ünï'");
        assert!(matches!(text("a\0b"), Err(StoreError::Invalid(_))));
    }

    #[test]
    fn numbers_and_ids_are_written_in_their_own_syntax() {
        assert_eq!(bigints(&[]), "'{}'::bigint[]");
        assert_eq!(
            bigints(&[1, -2, i64::MAX]),
            format!("'{{1,-2,{}}}'::bigint[]", i64::MAX)
        );
        let id = Uuid::nil();
        assert_eq!(uuid(id), "'00000000-0000-0000-0000-000000000000'::uuid");
    }
}
