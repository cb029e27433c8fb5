//! What a relay's passes carry beside their options: the route, the
//! labels of the relay's metrics, and the tenant it serves.

use std::sync::Arc;

use metrics::Label;

use crate::give_up::GiveUpHook;
use crate::{Envelope, Route};

/// The tenant a relay serves: every store of a database-per-tenant (or
/// schema-per-tenant) service is one. Set with
/// [`Relay::tenant`](super::Relay::tenant).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenant {
    pub(super) id: Arc<str>,
    pub(super) stamp: bool,
}

impl Tenant {
    /// The tenant `id`, labelling the relay's metrics and, in a
    /// [`SharedRelay`](super::SharedRelay), sharing its turns fairly with
    /// the other tenants.
    pub fn new(id: impl Into<Arc<str>>) -> Self {
        Self {
            id: id.into(),
            stamp: false,
        }
    }

    /// Also sets every envelope's `tenant_id` to this tenant when it is
    /// published, whatever was staged: the store the row came from says
    /// whose it is.
    pub fn stamped(mut self) -> Self {
        self.stamp = true;
        self
    }

    /// The tenant's id.
    pub fn id(&self) -> &str {
        &self.id
    }
}

/// A relay's route with what its passes need beside it.
#[derive(Debug, Clone)]
pub(super) struct Lane {
    pub(super) route: Route,
    pub(super) tenant: Option<Tenant>,
    /// The hook run on each row before it is failed for good, if any.
    pub(super) give_up: Option<GiveUpHook>,
    labels: Vec<Label>,
}

impl Lane {
    pub(super) fn new(route: Route, tenant: Option<Tenant>) -> Self {
        let mut labels = vec![Label::new("route", route.name.to_string())];
        if let Some(tenant) = &tenant {
            labels.push(Label::new("tenant", tenant.id.to_string()));
        }
        Self {
            route,
            tenant,
            give_up: None,
            labels,
        }
    }

    /// The labels of the relay's metrics: its route, and its tenant when
    /// it has one.
    pub(super) fn labels(&self) -> &[Label] {
        &self.labels
    }

    /// The envelope to publish, stamped with the tenant when the relay
    /// was asked to.
    pub(super) fn stamp(&self, mut envelope: Envelope) -> Envelope {
        if let Some(tenant) = self.tenant.as_ref().filter(|t| t.stamp) {
            envelope.tenant_id = Some(tenant.id.to_string());
        }
        envelope
    }
}
