//! The setters and getters every options type has, written once.

/// Writes the `get_*` getters of an options type: one a line, the getter's
/// name, what it returns and the field it reads, each documented as the
/// setting of the setter named after the field. A getter returning a
/// reference starts its type with `&`; one that reads through a method
/// names it after the field (`tls.as_ref()`); one that reads a field of a
/// field names both (`limits.max_length`). Where the setter only stores
/// its argument, [`settings!`](crate::settings) writes the setter and the
/// getter together.
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

/// Writes the settings of an options type: for each, declared once, its
/// consuming setter and its `get_*` getter. An entry is the setter's doc,
/// its name and argument, then what it stores when that is not the
/// argument itself (`= limit.max(1)`, `= Some(limit)`, `= name.into()`),
/// then the getter's name and what it returns. The setter writes the field
/// named after it; the getter reads that field, by reference when its type
/// starts with `&`, or through a method named after it (`= as_deref()`).
/// A setting kept in a field of a field names both (`limits.max_length`).
/// A generic options type names its parameters (`settings!(Kept<S> { .. })`).
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
///     label: Option<String>,
/// }
///
/// tidings_core::settings!(PollerOptions {
///     /// The poller's name; default: empty.
///     name(name: impl Into<String>) = name.into(), get_name: &str;
///     /// The time between polls; default: none.
///     interval(interval: Duration), get_interval: Duration;
///     /// The most items a poll takes (at least 1); default: no limit.
///     limit(limit: usize) = Some(limit.max(1)), get_limit: Option<usize>;
///     /// A label for logs; default: none.
///     label(label: impl Into<String>) = Some(label.into()), get_label: Option<&str> = as_deref();
/// });
///
/// let options = PollerOptions::default().name("orders").limit(0).label("a");
/// assert_eq!(options.get_name(), "orders");
/// assert_eq!(options.get_limit(), Some(1));
/// assert_eq!(options.get_label(), Some("a"));
/// assert_eq!(options.get_interval(), Duration::ZERO);
/// ```
#[macro_export]
macro_rules! settings {
    (@value $arg:ident) => { $arg };
    (@value $arg:ident, $value:expr) => { $value };
    ($options:ident < $($generic:ident),+ > { $($settings:tt)* }) => {
        impl<$($generic),+> $options<$($generic),+> {
            $crate::settings!(@each $($settings)*);
        }
    };
    ($options:ty { $($settings:tt)* }) => {
        impl $options {
            $crate::settings!(@each $($settings)*);
        }
    };
    (@each $(#[$doc:meta])* $parent:ident.$set:ident($arg:ident: $input:ty) $(= $value:expr)?, $get:ident: $t:ty; $($rest:tt)*) => {
        $(#[$doc])*
        pub fn $set(mut self, $arg: $input) -> Self {
            self.$parent.$set = $crate::settings!(@value $arg $(, $value)?);
            self
        }
        $crate::getters!(@each $get: $t = $parent.$set;);
        $crate::settings!(@each $($rest)*);
    };
    (@each $(#[$doc:meta])* $set:ident($arg:ident: $input:ty) $(= $value:expr)?, $get:ident: $($rest:tt)*) => {
        $(#[$doc])*
        pub fn $set(mut self, $arg: $input) -> Self {
            self.$set = $crate::settings!(@value $arg $(, $value)?);
            self
        }
        $crate::settings!(@getter $set $get: $($rest)*);
    };
    (@getter $field:ident $get:ident: &$t:ty; $($rest:tt)*) => {
        $crate::getters!(@each $get: &$t = $field;);
        $crate::settings!(@each $($rest)*);
    };
    (@getter $field:ident $get:ident: $t:ty = $method:ident(); $($rest:tt)*) => {
        $crate::getters!(@each $get: $t = $field.$method(););
        $crate::settings!(@each $($rest)*);
    };
    (@getter $field:ident $get:ident: $t:ty; $($rest:tt)*) => {
        $crate::getters!(@each $get: $t = $field;);
        $crate::settings!(@each $($rest)*);
    };
    (@each) => {};
}

/// Writes the per-destination settings of a publisher's options type: the
/// consuming setter `destination(name, options)` and the getter
/// `get_destination(name)`, over a field
/// `destinations: HashMap<String, DestinationOptions>`.
///
/// ```
/// use std::collections::HashMap;
///
/// /// Settings for the messages of one destination.
/// #[derive(Debug, Clone, Default, PartialEq)]
/// pub struct DestinationOptions {
///     priority: u8,
/// }
///
/// /// Settings of a publisher.
/// #[derive(Debug, Default)]
/// pub struct PublisherOptions {
///     destinations: HashMap<String, DestinationOptions>,
/// }
///
/// tidings_core::destination_settings!(PublisherOptions, DestinationOptions);
///
/// let urgent = DestinationOptions { priority: 9 };
/// let options = PublisherOptions::default().destination("alerts", urgent.clone());
/// assert_eq!(options.get_destination("alerts"), Some(&urgent));
/// assert_eq!(options.get_destination("orders"), None);
/// ```
#[macro_export]
macro_rules! destination_settings {
    ($options:ty, $destination:ident) => {
        impl $options {
            /// Settings for the messages whose destination is `destination`;
            #[doc = concat!("destinations without settings use [`", stringify!($destination), "::default`].")]
            pub fn destination(
                mut self,
                destination: impl Into<String>,
                options: $destination,
            ) -> Self {
                self.destinations.insert(destination.into(), options);
                self
            }

            /// The [`destination`](Self::destination) settings of `destination`,
            /// `None` where it has none of its own.
            pub fn get_destination(&self, destination: &str) -> Option<&$destination> {
                self.destinations.get(destination)
            }
        }
    };
}
