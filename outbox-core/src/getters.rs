//! The getters every options type has, written once.

/// Writes the `get_*` getters of an options type: one a line, the getter's
/// name, what it returns and the field it reads, each documented as the
/// setting of the setter named after the field. A getter returning a
/// reference starts its type with `&`; one that reads through a method
/// names it after the field (`tls.as_ref()`); one that reads a field of a
/// field names both (`limits.max_length`).
///
/// ```
/// use std::time::Duration;
///
/// /// Settings of a poller.
/// #[derive(Debug, Default)]
/// pub struct PollerOptions {
///     name: String,
///     interval: Duration,
///     limit: Option<usize>,
/// }
///
/// impl PollerOptions {
///     /// The poller's name; default: empty.
///     pub fn name(mut self, name: impl Into<String>) -> Self {
///         self.name = name.into();
///         self
///     }
///
///     /// The time between polls; default: none.
///     pub fn interval(mut self, interval: Duration) -> Self {
///         self.interval = interval;
///         self
///     }
///
///     /// The most items a poll takes; default: no limit.
///     pub fn limit(mut self, limit: usize) -> Self {
///         self.limit = Some(limit);
///         self
///     }
/// }
///
/// tidings_core::getters!(PollerOptions {
///     get_name: &str = name;
///     get_interval: Duration = interval;
///     get_limit: Option<usize> = limit;
/// });
///
/// let options = PollerOptions::default().name("orders").limit(10);
/// assert_eq!(options.get_name(), "orders");
/// assert_eq!(options.get_limit(), Some(10));
/// ```
#[macro_export]
macro_rules! getters {
    ($options:ty { $($getters:tt)* }) => {
        impl $options {
            $crate::getters!(@each $($getters)*);
        }
    };
    (@each) => {};
    (@each $get:ident: &$t:ty = $field:ident; $($rest:tt)*) => {
        #[doc = concat!("The [`", stringify!($field), "`](Self::", stringify!($field), ") setting.")]
        pub fn $get(&self) -> &$t {
            &self.$field
        }
        $crate::getters!(@each $($rest)*);
    };
    (@each $get:ident: $t:ty = $field:ident.$method:ident(); $($rest:tt)*) => {
        #[doc = concat!("The [`", stringify!($field), "`](Self::", stringify!($field), ") setting.")]
        pub fn $get(&self) -> $t {
            self.$field.$method()
        }
        $crate::getters!(@each $($rest)*);
    };
    (@each $get:ident: $t:ty = $parent:ident.$field:ident; $($rest:tt)*) => {
        #[doc = concat!("The [`", stringify!($field), "`](Self::", stringify!($field), ") setting.")]
        pub fn $get(&self) -> $t {
            self.$parent.$field
        }
        $crate::getters!(@each $($rest)*);
    };
    (@each $get:ident: $t:ty = $field:ident; $($rest:tt)*) => {
        #[doc = concat!("The [`", stringify!($field), "`](Self::", stringify!($field), ") setting.")]
        pub fn $get(&self) -> $t {
            self.$field
        }
        $crate::getters!(@each $($rest)*);
    };
}
