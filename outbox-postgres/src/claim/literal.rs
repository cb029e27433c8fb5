//! Values written into the text of a statement, for the settle scripts
//! sent in the simple protocol, which takes no parameters. Each is written
//! so that the server reads back exactly the value, whatever its text.

use std::fmt::Write;

use uuid::Uuid;

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
