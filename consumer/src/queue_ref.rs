//! The queue spec a consumer reads.

use std::ops::Deref;
use std::sync::Arc;

use tidings_core::QueueSpec;

/// The queue spec a consumer reads: a `static` one, borrowed, or one made
/// at run time (a name with an environment's prefix, say), owned.
/// [`Consumer::new`](crate::Consumer::new) takes either.
///
/// ```
/// use tidings_consumer::QueueRef;
/// use tidings_core::QueueSpec;
///
/// static ORDERS: QueueSpec<u64> = QueueSpec::json("orders");
/// let borrowed: QueueRef<u64> = (&ORDERS).into();
/// let owned: QueueRef<u64> = QueueSpec::json_named(format!("{}-orders", "staging")).into();
/// assert_eq!((borrowed.name(), owned.name()), ("orders", "staging-orders"));
/// ```
pub struct QueueRef<T: 'static, C: 'static = tidings_core::JsonCodec>(Held<T, C>);

enum Held<T: 'static, C: 'static> {
    Static(&'static QueueSpec<T, C>),
    Owned(Arc<QueueSpec<T, C>>),
}

impl<T, C> Clone for QueueRef<T, C> {
    fn clone(&self) -> Self {
        Self(match &self.0 {
            Held::Static(spec) => Held::Static(spec),
            Held::Owned(spec) => Held::Owned(spec.clone()),
        })
    }
}

impl<T, C> Deref for QueueRef<T, C> {
    type Target = QueueSpec<T, C>;

    fn deref(&self) -> &QueueSpec<T, C> {
        match &self.0 {
            Held::Static(spec) => spec,
            Held::Owned(spec) => spec,
        }
    }
}

impl<T, C> From<&'static QueueSpec<T, C>> for QueueRef<T, C> {
    fn from(spec: &'static QueueSpec<T, C>) -> Self {
        Self(Held::Static(spec))
    }
}

impl<T, C> From<QueueSpec<T, C>> for QueueRef<T, C> {
    fn from(spec: QueueSpec<T, C>) -> Self {
        Self(Held::Owned(Arc::new(spec)))
    }
}

impl<T, C> From<Arc<QueueSpec<T, C>>> for QueueRef<T, C> {
    fn from(spec: Arc<QueueSpec<T, C>>) -> Self {
        Self(Held::Owned(spec))
    }
}
