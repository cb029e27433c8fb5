//! Values in the text format of the simple protocol, for the claims sent
//! that way, where sqlx's own decoding is slow (`bytea`) or wrong
//! (`timestamptz` on a whole second, whose fraction it appends after the
//! offset). Claim connections set the formats read here: `bytea_output`
//! escape, `DateStyle` ISO and the time zone UTC.

use time::{Date, Month, OffsetDateTime, PrimitiveDateTime, Time, UtcOffset};

/// Decodes `bytea` in either text format: hex (`\x`, then two hex digits
/// a byte) or escape (claim connections ask for it: see [`escaped`]). A
/// value in the escape format never starts with `\x`, since it doubles
/// every backslash.
pub(crate) fn bytea(text: &[u8]) -> Result<Vec<u8>, String> {
    match text.strip_prefix(b"\\x") {
        Some(digits) => hex(digits, text),
        None => escaped(text),
    }
}

/// Hex digits, two a byte, of the value `text`.
fn hex(digits: &[u8], text: &[u8]) -> Result<Vec<u8>, String> {
    if digits.len() % 2 != 0 {
        return Err(not_bytea(text));
    }
    let mut bytes = Vec::with_capacity(digits.len() / 2);
    for pair in digits.chunks_exact(2) {
        let (high, low) = (NIBBLES[usize::from(pair[0])], NIBBLES[usize::from(pair[1])]);
        if (high | low) > 0xf {
            return Err(not_bytea(text));
        }
        bytes.push(high << 4 | low);
    }
    Ok(bytes)
}

/// The escape format: printable ASCII bytes as they are, a backslash as
/// `\\`, and every other byte as `\` and three octal digits. A JSON
/// payload comes back at its own size, where hex doubles it, which costs
/// the server more to write and the relay more to read.
fn escaped(text: &[u8]) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.iter().position(|&b| b == b'\\') {
        bytes.extend_from_slice(&rest[..at]);
        rest = match &rest[at + 1..] {
            [b'\\', tail @ ..] => {
                bytes.push(b'\\');
                tail
            }
            [a @ b'0'..=b'3', b @ b'0'..=b'7', c @ b'0'..=b'7', tail @ ..] => {
                bytes.push((a - b'0') << 6 | (b - b'0') << 3 | (c - b'0'));
                tail
            }
            _ => return Err(not_bytea(text)),
        };
    }
    bytes.extend_from_slice(rest);
    Ok(bytes)
}

/// The error for `text`, which is not `bytea` in either format.
fn not_bytea(text: &[u8]) -> String {
    let start = String::from_utf8_lossy(&text[..text.len().min(16)]);
    format!("not bytea text: {start:?}")
}

/// The value of each hex digit, by its byte; `0xff` for every other byte.
const NIBBLES: [u8; 256] = {
    let mut table = [0xff; 256];
    let mut i = 0;
    while i < 10 {
        table[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        table[b'a' as usize + i] = 10 + i as u8;
        table[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    table
};

/// Decodes a `timestamptz` as written with `DateStyle` ISO:
/// `2026-11-25 08:26:19.667728+00`, the fraction (up to six digits) only
/// where there is one, the offset as `±hh`, `±hh:mm` or `±hh:mm:ss`.
/// Years before 1 AD, written with ` BC`, are refused.
pub(crate) fn timestamptz(text: &str) -> Result<OffsetDateTime, String> {
    let bad = |why: &str| format!("timestamptz text {text:?}: {why}");
    let (date, rest) = text.split_once(' ').ok_or_else(|| bad("no time"))?;
    let split = rest.rfind(['+', '-']).ok_or_else(|| bad("no offset"))?;
    let (time, offset) = rest.split_at(split);
    let [year, month, day] = fields(date, '-').ok_or_else(|| bad("no date"))?;
    let (whole, fraction) = time.split_once('.').unwrap_or((time, ""));
    let [hour, minute, second] = fields(whole, ':').ok_or_else(|| bad("no time"))?;
    if fraction.len() > 6 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad("fraction"));
    }
    let micros = format!("{fraction:0<6}").parse::<u32>().unwrap_or(0);
    let offset = self::offset(offset).ok_or_else(|| bad("offset"))?;
    let month = Month::try_from(u8::try_from(month).map_err(|_| bad("month"))?)
        .map_err(|e| bad(&e.to_string()))?;
    let year = i32::try_from(year).map_err(|_| bad("year"))?;
    let date =
        Date::from_calendar_date(year, month, small(day)?).map_err(|e| bad(&e.to_string()))?;
    let time = Time::from_hms_micro(small(hour)?, small(minute)?, small(second)?, micros)
        .map_err(|e| bad(&e.to_string()))?;
    Ok(PrimitiveDateTime::new(date, time).assume_offset(offset))
}

/// Three unsigned numbers separated by `separator`.
fn fields(text: &str, separator: char) -> Option<[u32; 3]> {
    let mut parts = text.split(separator).map(|p| {
        let digits = !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
        digits.then(|| p.parse().ok()).flatten()
    });
    let fields = [parts.next()??, parts.next()??, parts.next()??];
    parts.next().is_none().then_some(fields)
}

/// An offset written `±hh`, `±hh:mm` or `±hh:mm:ss`.
fn offset(text: &str) -> Option<UtcOffset> {
    let (sign, digits) = text.split_at_checked(1)?;
    let sign: i8 = if sign == "-" { -1 } else { 1 };
    let mut parts = [0i8; 3];
    for (i, part) in digits.split(':').enumerate() {
        let valid = part.len() == 2 && part.bytes().all(|b| b.is_ascii_digit());
        *parts.get_mut(i)? = if valid { part.parse().ok()? } else { None? };
    }
    UtcOffset::from_hms(sign * parts[0], sign * parts[1], sign * parts[2]).ok()
}

fn small(value: u32) -> Result<u8, String> {
    u8::try_from(value).map_err(|_| format!("{value} is out of range"))
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;

    #[test]
    fn hex_bytea_text_is_decoded() {
        assert_eq!(bytea(b"\\x").unwrap(), Vec::<u8>::new());
        assert_eq!(bytea(b"\\x00ff7Ba0").unwrap(), vec![0, 255, 0x7b, 0xa0]);
        assert!(bytea(b"\\x0").is_err(), "half a byte");
        assert!(bytea(b"\\x0g").is_err(), "not a hex digit");
    }

    #[test]
    fn escaped_bytea_text_is_decoded() {
        assert_eq!(bytea(b"").unwrap(), Vec::<u8>::new());
        assert_eq!(bytea(b"{\"n\":1}").unwrap(), b"{\"n\":1}");
        assert_eq!(bytea(b"a\\\\x41").unwrap(), b"a\\x41");
        assert_eq!(
            bytea(b"\\\\x00").unwrap(),
            b"\\x00",
            "a backslash, then x00"
        );
        assert_eq!(bytea(b"\\000\\377\\012z").unwrap(), [0, 255, 10, b'z']);
        for bad in [&b"\\"[..], b"a\\0", b"\\400", b"\\08x", b"\\q"] {
            assert!(bytea(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn iso_timestamps_are_decoded_with_or_without_a_fraction() {
        let cases = [
            (
                "2026-11-25 08:26:19.667728+00",
                datetime!(2026-11-25 08:26:19.667728 UTC),
            ),
            ("2026-11-25 08:26:19+00", datetime!(2026-11-25 08:26:19 UTC)),
            (
                "2026-11-25 08:26:19.5+00",
                datetime!(2026-11-25 08:26:19.5 UTC),
            ),
            (
                "0099-01-02 00:00:00.000001+00",
                datetime!(0099-01-02 00:00:00.000001 UTC),
            ),
            ("2026-11-25 10:26:19+02", datetime!(2026-11-25 08:26:19 UTC)),
            (
                "2026-11-25 03:56:19-04:30",
                datetime!(2026-11-25 08:26:19 UTC),
            ),
            (
                "2026-11-25 08:26:19+00:00:30",
                datetime!(2026-11-25 08:25:49 UTC),
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(timestamptz(text), Ok(expected), "{text}");
        }
    }

    #[test]
    fn malformed_timestamps_are_refused() {
        for text in [
            "",
            "2026-11-25",
            "2026-11-25 08:26:19",
            "2026-13-25 08:26:19+00",
            "2026-11-25 08:26:19.1234567+00",
            "2026-11-25 08:26:19.x+00",
            "2026-11-25 08:26+00",
            "0001-01-01 00:00:00+00 BC",
            "2026-11-25 08:26:19+0",
            "2026--11-25 08:26:19+00",
        ] {
            assert!(timestamptz(text).is_err(), "{text}");
        }
    }
}
