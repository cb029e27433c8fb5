use super::SpecError;

/// The longest name a spec may carry, in bytes. Transports may allow less
/// (SQS queue names stop at 80) and check that themselves.
pub const MAX_NAME_LEN: usize = 120;

/// Checks a spec, route or queue name: 1 to [`MAX_NAME_LEN`] bytes of
/// `[A-Za-z0-9._-]`, starting with a letter or digit.
///
/// `kind` says what the name is for and appears in the error.
///
/// # Errors
///
/// [`SpecError::EmptyName`], [`SpecError::NameTooLong`] or
/// [`SpecError::IllegalName`] when `name` breaks one of these rules.
pub fn validate_name(kind: &'static str, name: &str) -> Result<(), SpecError> {
    if name.is_empty() {
        return Err(SpecError::EmptyName { kind });
    }
    if name.len() > MAX_NAME_LEN {
        return Err(SpecError::NameTooLong {
            kind,
            name: name.to_owned(),
            len: name.len(),
            max: MAX_NAME_LEN,
        });
    }
    let illegal = name.char_indices().find(|&(at, c)| {
        let legal = c.is_ascii_alphanumeric() || (at > 0 && matches!(c, '.' | '_' | '-'));
        !legal
    });
    match illegal {
        Some((at, found)) => Err(SpecError::IllegalName {
            kind,
            name: name.to_owned(),
            found,
            at,
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_ordinary_names() {
        for name in ["orders", "order-events", "billing.v2", "a_b", "Q1"] {
            validate_name("queue", name).unwrap();
        }
    }

    #[test]
    fn rejects_empty() {
        assert_eq!(
            validate_name("queue", ""),
            Err(SpecError::EmptyName { kind: "queue" })
        );
    }

    #[test]
    fn rejects_too_long() {
        let name = "a".repeat(MAX_NAME_LEN + 1);
        let err = validate_name("outbox", &name).unwrap_err();
        assert!(matches!(err, SpecError::NameTooLong { len, .. } if len == MAX_NAME_LEN + 1));
    }

    #[test]
    fn rejects_hostile_characters() {
        for (name, found) in [
            ("orders\"; drop table x", '"'),
            ("a b", ' '),
            ("-leading", '-'),
            ("ünï", 'ü'),
            ("x/y", '/'),
        ] {
            let err = validate_name("queue", name).unwrap_err();
            assert!(
                matches!(&err, SpecError::IllegalName { found: f, .. } if *f == found),
                "{name}: {err}"
            );
        }
    }
}
