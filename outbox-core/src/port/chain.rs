//! An error and its causes as one line, for logs, stored reasons and the
//! messages operators read.

use std::error::Error;

/// How sqlx opens the message of an error the database server returned.
const DATABASE_ERROR: &str = "error returned from database: ";

/// An error and its sources, joined by `: `, each said once.
///
/// Many errors repeat their source in their own message (sqlx's
/// `error returned from database: {source}` does), so a plain join says
/// the same thing twice; a cause whose message the text already holds is
/// left out. A PostgreSQL server error also ends with ` at line N`, a line
/// of the server's own C source that means nothing to the reader: it is
/// dropped from every message of a chain that came from the database.
///
/// ```
/// # use tidings_core::port::error_chain;
/// let error = std::io::Error::other("connection reset");
/// assert_eq!(error_chain(&error), "connection reset");
/// ```
pub fn error_chain(error: &(dyn Error + 'static)) -> String {
    let mut messages = Vec::new();
    let mut next = Some(error);
    while let Some(cause) = next {
        messages.push(cause.to_string());
        next = cause.source();
    }
    if messages.iter().any(|m| m.starts_with(DATABASE_ERROR)) {
        for message in &mut messages {
            let kept = without_server_line(message).len();
            message.truncate(kept);
        }
    }
    let mut text = String::new();
    for message in messages {
        if message.is_empty() || text.contains(&message) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&message);
    }
    text
}

/// `message` without a trailing ` at line N`.
fn without_server_line(message: &str) -> &str {
    let Some((head, line)) = message.rsplit_once(" at line ") else {
        return message;
    };
    if !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit()) {
        head
    } else {
        message
    }
}

#[cfg(test)]
mod tests {
    use std::fmt;

    use super::*;

    /// An error with a message and an optional source, as drivers nest them.
    #[derive(Debug)]
    struct Nested(String, Option<Box<Nested>>);

    impl fmt::Display for Nested {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(&self.0)
        }
    }

    impl Error for Nested {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            self.1.as_deref().map(|e| e as &(dyn Error + 'static))
        }
    }

    fn nested(messages: &[&str]) -> Nested {
        messages
            .iter()
            .rev()
            .fold(None, |source, m| {
                Some(Nested(m.to_string(), source.map(Box::new)))
            })
            .unwrap()
    }

    #[test]
    fn a_unique_violation_reads_once_without_the_server_line() {
        let server =
            r#"duplicate key value violates unique constraint "invoices_pkey" at line 664"#;
        let error = nested(&[&format!("{DATABASE_ERROR}{server}"), server]);
        assert_eq!(
            error_chain(&error),
            r#"error returned from database: duplicate key value violates unique constraint "invoices_pkey""#
        );
    }

    #[test]
    fn a_wrapped_database_error_keeps_the_wrapper_and_says_the_cause_once() {
        let server = "null value in column \"total\" violates not-null constraint at line 2010";
        let error = nested(&[
            "storing the invoice failed",
            &format!("{DATABASE_ERROR}{server}"),
            server,
        ]);
        assert_eq!(
            error_chain(&error),
            "storing the invoice failed: error returned from database: \
             null value in column \"total\" violates not-null constraint"
        );
    }

    #[test]
    fn distinct_causes_are_all_joined() {
        let error = nested(&["publish failed", "channel closed", "connection reset"]);
        assert_eq!(
            error_chain(&error),
            "publish failed: channel closed: connection reset"
        );
    }

    #[test]
    fn a_line_number_outside_a_database_error_is_kept() {
        let error = nested(&["bad invoice file at line 12"]);
        assert_eq!(error_chain(&error), "bad invoice file at line 12");
        let error = nested(&["expected value at line 1 column 1"]);
        assert_eq!(error_chain(&error), "expected value at line 1 column 1");
    }

    #[test]
    fn a_cause_the_message_quotes_is_left_out() {
        let error = nested(&["decode failed: missing field `id`", "missing field `id`"]);
        assert_eq!(error_chain(&error), "decode failed: missing field `id`");
    }
}
