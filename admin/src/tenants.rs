//! The stores of a database-per-tenant service, each under its tenant's
//! id.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::stores::AdminStore;
use crate::views::Status;
use crate::{Admin, AdminError};

/// The operations on several stores, one per tenant, in tenant order.
///
/// ```no_run
/// # #[cfg(feature = "postgres")]
/// # async fn demo(acme: tidings_postgres::PgOutboxStore, globex: tidings_postgres::PgOutboxStore) -> Result<(), tidings_admin::AdminError> {
/// use tidings_admin::{Admin, Tenants};
///
/// let tenants = Tenants::new()
///     .tenant("acme", Admin::new(acme))
///     .tenant("globex", Admin::new(globex));
/// for tenant in tenants.status().await? {
///     let pending: u64 = tenant.status.routes.iter().map(|r| r.pending).sum();
///     println!("{}: {pending} pending", tenant.tenant);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Tenants<S> {
    admins: BTreeMap<String, Admin<S>>,
}

impl<S> Default for Tenants<S> {
    fn default() -> Self {
        Self {
            admins: BTreeMap::new(),
        }
    }
}

/// One tenant's status.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TenantStatus {
    /// The tenant's id.
    pub tenant: String,
    /// Its store's routes and consumers.
    pub status: Status,
}

impl<S: AdminStore> Tenants<S> {
    /// No tenant yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the store of tenant `id` (replacing one of the same id).
    pub fn tenant(mut self, id: impl Into<String>, admin: Admin<S>) -> Self {
        self.admins.insert(id.into(), admin);
        self
    }

    /// The operations on tenant `id`'s store.
    ///
    /// # Errors
    ///
    /// [`AdminError::UnknownTenant`] when no tenant has that id.
    pub fn get(&self, id: &str) -> Result<&Admin<S>, AdminError> {
        (self.admins.get(id)).ok_or_else(|| AdminError::UnknownTenant {
            tenant: id.to_owned(),
            known: self.ids().map(str::to_owned).collect(),
        })
    }

    /// The tenants' ids, in order.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.admins.keys().map(String::as_str)
    }

    /// Every tenant's status, in tenant order.
    ///
    /// # Errors
    ///
    /// The first tenant's [`AdminError::Store`] when its store cannot be read.
    pub async fn status(&self) -> Result<Vec<TenantStatus>, AdminError> {
        let mut all = Vec::with_capacity(self.admins.len());
        for (tenant, admin) in &self.admins {
            let status = admin.status().await?;
            all.push(TenantStatus {
                tenant: tenant.clone(),
                status,
            });
        }
        Ok(all)
    }
}
