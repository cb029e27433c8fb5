//! Splitting messages into `SendMessageBatch` calls.

/// The most entries SQS takes in one batch call.
pub(crate) const MAX_BATCH_ENTRIES: usize = 10;

/// Splits `items`, in order, into chunks of at most `max_entries` whose
/// sizes add up to at most `max_bytes`. An item larger than `max_bytes`
/// gets a chunk of its own (callers reject those before).
pub(crate) fn chunk<T>(
    items: Vec<T>,
    size: impl Fn(&T) -> usize,
    max_entries: usize,
    max_bytes: usize,
) -> Vec<Vec<T>> {
    let mut chunks: Vec<Vec<T>> = Vec::new();
    let mut current: Vec<T> = Vec::new();
    let mut bytes = 0;
    for item in items {
        let item_size = size(&item);
        let full = current.len() >= max_entries || bytes + item_size > max_bytes;
        if full && !current.is_empty() {
            chunks.push(std::mem::take(&mut current));
            bytes = 0;
        }
        bytes += item_size;
        current.push(item);
    }
    if !current.is_empty() {
        chunks.push(current);
    }
    chunks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes(chunks: &[Vec<usize>]) -> Vec<usize> {
        chunks.iter().map(Vec::len).collect()
    }

    #[test]
    fn chunks_hold_at_most_ten_entries() {
        let chunks = chunk(vec![1; 25], |s| *s, MAX_BATCH_ENTRIES, 1000);
        assert_eq!(sizes(&chunks), [10, 10, 5]);
    }

    #[test]
    fn chunks_stay_within_the_byte_limit() {
        let chunks = chunk(vec![40, 40, 40, 10, 90, 5], |s| *s, 10, 100);
        assert_eq!(chunks, [vec![40, 40], vec![40, 10], vec![90, 5]]);
    }

    #[test]
    fn order_is_kept_and_nothing_is_lost() {
        let items: Vec<usize> = (1..=30).collect();
        let chunks = chunk(items.clone(), |s| *s, 4, 50);
        assert!(
            chunks
                .iter()
                .all(|c| c.len() <= 4 && c.iter().sum::<usize>() <= 50)
        );
        assert_eq!(chunks.concat(), items);
    }

    #[test]
    fn nothing_gives_no_chunks() {
        assert!(chunk(Vec::<usize>::new(), |s| *s, 10, 10).is_empty());
    }
}
