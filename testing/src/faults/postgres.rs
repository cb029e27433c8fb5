//! Ending a process's own PostgreSQL sessions from the server's side.

use sqlx::PgPool;

/// Terminates every session whose `application_name` is `application`
/// (other than the one asking), as a database failover or an idle-session
/// killer would; returns how many ended. Give the pools under test their
/// own name (`PgConnectOptions::application_name`) so nothing else is
/// touched.
///
/// # Errors
///
/// The statement failed, or the role may not signal those backends (it
/// needs to own them or hold `pg_signal_backend`).
pub async fn terminate_postgres_sessions(pool: &PgPool, application: &str) -> sqlx::Result<u64> {
    let ended: Vec<bool> = sqlx::query_scalar(
        "select pg_terminate_backend(pid) from pg_stat_activity \
         where application_name = $1 and pid <> pg_backend_pid()",
    )
    .bind(application)
    .fetch_all(pool)
    .await?;
    Ok(ended.into_iter().filter(|ended| *ended).count() as u64)
}
