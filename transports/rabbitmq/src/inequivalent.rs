//! Reading the broker's "inequivalent arg" refusal: a queue or exchange
//! exists with other arguments than the ones declared.

/// What a `PRECONDITION_FAILED - inequivalent arg ..` refusal says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Inequivalent {
    /// The argument, such as `x-single-active-consumer` or `durable`.
    pub(crate) argument: String,
    /// The value declared, `None` for not set.
    pub(crate) asked: Option<String>,
    /// The value the existing queue has, `None` for not set.
    pub(crate) current: Option<String>,
}

/// Reads `text` when it is an "inequivalent arg" refusal, for example
/// `PRECONDITION_FAILED - inequivalent arg 'x-queue-type' for queue 'q' in
/// vhost '/': received the value 'classic' of type 'longstr' but current
/// is the value 'quorum' of type 'longstr'`.
pub(crate) fn read(text: &str) -> Option<Inequivalent> {
    let (_, rest) = text.split_once("inequivalent arg '")?;
    let (argument, rest) = rest.split_once('\'')?;
    let (_, rest) = rest.split_once(": received ")?;
    let (asked, current) = rest.split_once(" but current is ")?;
    Some(Inequivalent {
        argument: argument.to_owned(),
        asked: value(asked),
        current: value(current),
    })
}

/// `none`, `'v'` or `the value 'v' of type 't'` as the value.
fn value(text: &str) -> Option<String> {
    let text = text.trim();
    if text == "none" {
        return None;
    }
    let quoted = text.strip_prefix("the value ").unwrap_or(text);
    let inner = quoted.strip_prefix('\'').unwrap_or(quoted);
    let end = inner.rfind("' of type '").or_else(|| inner.rfind('\''));
    Some(end.map_or(inner, |end| &inner[..end]).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_typed_values() {
        let text = "PRECONDITION_FAILED - inequivalent arg 'x-queue-type' for queue 'q' in \
                    vhost '/': received the value 'classic' of type 'longstr' but current is \
                    the value 'quorum' of type 'longstr'";
        assert_eq!(
            read(text),
            Some(Inequivalent {
                argument: "x-queue-type".into(),
                asked: Some("classic".into()),
                current: Some("quorum".into()),
            })
        );
    }

    #[test]
    fn reads_an_argument_set_on_one_side_only() {
        let text = "PRECONDITION_FAILED - inequivalent arg 'x-single-active-consumer' for queue \
                    'orders' in vhost '/': received none but current is the value 'true' of type \
                    'bool'";
        let read = read(text).unwrap();
        assert_eq!(read.argument, "x-single-active-consumer");
        assert_eq!((read.asked, read.current), (None, Some("true".into())));
    }

    #[test]
    fn reads_plain_values() {
        let text = "PRECONDITION_FAILED - inequivalent arg 'durable' for queue 'q' in vhost '/': \
                    received 'true' but current is 'false'";
        let read = read(text).unwrap();
        assert_eq!(
            (read.asked.as_deref(), read.current.as_deref()),
            (Some("true"), Some("false"))
        );
        assert_eq!(super::read("PRECONDITION_FAILED - other"), None);
    }
}
