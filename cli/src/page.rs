//! `tidings serve`: the admin page until Ctrl-C.

use anyhow::Context;
use tidings_admin::dead_letters::RabbitDeadLetters;
use tidings_admin::page::AdminPage;
use tidings_admin::{Admin, AdminStore};

use crate::args::{BrokerArgs, BrokerKind, ServeArgs};

/// Serves the admin page over `admin` until interrupted.
pub(crate) async fn serve<S: AdminStore>(
    admin: Admin<S>,
    broker: &BrokerArgs,
    args: ServeArgs,
) -> anyhow::Result<()> {
    let mut page = AdminPage::new(admin);
    if let Some(token) = args.token {
        page = page.token(token);
    }
    if !args.dead_letter_queue.is_empty() {
        if broker.broker != BrokerKind::Rabbitmq {
            anyhow::bail!("the admin page shows RabbitMQ dead-letter queues only");
        }
        let connection =
            RabbitDeadLetters::connect_as(&broker.amqp_url, &broker.amqp_connection_name)
                .await
                .context("check --amqp-url (or TIDINGS_AMQP_URL)")?;
        page = page.dead_letters(connection, args.dead_letter_queue);
    }
    let listener = page.bind(args.bind).await?;
    eprintln!(
        "admin page on http://{}/ (Ctrl-C stops it)",
        listener.local_addr()?
    );
    let stop = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    page.serve_on(listener, stop).await?;
    Ok(())
}
