//! `tidings serve`: the operator console until Ctrl-C.

use anyhow::Context;
use tidings_admin::dead_letters::RabbitDeadLetters;
use tidings_admin::page::AdminPage;
use tidings_admin::{Admin, AdminStore};

use crate::args::{BrokerArgs, BrokerKind, ServeArgs, StoreArgs, StoreKind};

/// Serves the console over `admin`, with the `stored` inboxes beside it,
/// until interrupted.
pub(crate) async fn serve<S: AdminStore>(
    admin: Admin<S>,
    stored: Vec<(String, Admin<S>)>,
    store: &StoreArgs,
    broker: &BrokerArgs,
    args: ServeArgs,
) -> anyhow::Result<()> {
    let mut page = AdminPage::new(admin).refresh(args.refresh);
    for (name, inbox) in stored {
        page = page.stored_inbox(name, inbox);
    }
    for (label, value) in context(store, broker, &args) {
        page = page.context(label, value);
    }
    if let Some(token) = args.token {
        page = page.token(token);
    }
    if !args.dead_letter_queue.is_empty() {
        page = match broker.broker {
            BrokerKind::Rabbitmq => {
                let connection =
                    RabbitDeadLetters::connect_as(&broker.amqp_url, &broker.amqp_connection_name)
                        .await
                        .context("check --amqp-url (or TIDINGS_AMQP_URL)")?;
                page.dead_letters(connection, args.dead_letter_queue)
            }
            BrokerKind::Sqs => sqs(page, broker, args.dead_letter_queue)?,
            BrokerKind::Kafka => kafka(page, broker, args.dead_letter_queue)?,
        };
    }
    let listener = page.bind(args.bind).await?;
    eprintln!(
        "console on http://{}/ (Ctrl-C stops it)",
        listener.local_addr()?
    );
    let stop = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    page.serve_on(listener, stop).await?;
    Ok(())
}

#[cfg(feature = "sqs")]
fn sqs<S: AdminStore>(
    page: AdminPage<S>,
    broker: &BrokerArgs,
    queues: Vec<String>,
) -> anyhow::Result<AdminPage<S>> {
    use tidings_admin::dead_letters::SqsDeadLetters;
    let client = crate::connect::sqs_client(broker.sqs_endpoint.as_deref());
    Ok(page.dead_letters(SqsDeadLetters::new(client), queues))
}

#[cfg(not(feature = "sqs"))]
fn sqs<S: AdminStore>(
    _: AdminPage<S>,
    _: &BrokerArgs,
    _: Vec<String>,
) -> anyhow::Result<AdminPage<S>> {
    anyhow::bail!("this build has no SQS support; build tidings-cli with --features sqs")
}

#[cfg(feature = "kafka")]
fn kafka<S: AdminStore>(
    page: AdminPage<S>,
    broker: &BrokerArgs,
    topics: Vec<String>,
) -> anyhow::Result<AdminPage<S>> {
    use tidings_admin::dead_letters::KafkaDeadLetters;
    use tidings_admin::tidings_kafka::ClientOptions;
    let client = ClientOptions::new(&broker.kafka_brokers).client_id("tidings-console");
    Ok(page.dead_letters(KafkaDeadLetters::new(&client)?, topics))
}

#[cfg(not(feature = "kafka"))]
fn kafka<S: AdminStore>(
    _: AdminPage<S>,
    _: &BrokerArgs,
    _: Vec<String>,
) -> anyhow::Result<AdminPage<S>> {
    anyhow::bail!("this build has no Kafka support; build tidings-cli with --features kafka")
}

/// What the console says it looks at: the store (its URL without the
/// password), the schema or database, the tenant, the broker.
fn context(store: &StoreArgs, broker: &BrokerArgs, args: &ServeArgs) -> Vec<(String, String)> {
    let mut items = Vec::new();
    match store.store {
        StoreKind::Postgres => {
            items.push(("database".into(), without_password(&store.database_url)));
            let schema = store.schema.clone().unwrap_or_else(|| "public".into());
            items.push(("schema".into(), schema));
        }
        StoreKind::Mongo => {
            items.push(("database".into(), without_password(&store.mongodb_url)));
            items.push(("mongodb database".into(), store.mongodb_database.clone()));
        }
    }
    if let Some(tenant) = &args.tenant {
        items.push(("tenant".into(), tenant.clone()));
    }
    if !args.dead_letter_queue.is_empty() {
        let at = match broker.broker {
            BrokerKind::Rabbitmq => format!("rabbitmq {}", without_password(&broker.amqp_url)),
            BrokerKind::Sqs => format!(
                "sqs {}",
                broker
                    .sqs_endpoint
                    .as_deref()
                    .unwrap_or("(AWS default endpoint)")
            ),
            BrokerKind::Kafka => format!("kafka {}", broker.kafka_brokers),
        };
        items.push(("broker".into(), at));
    }
    items
}

/// `url` with any password replaced by `***`.
fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((user_info, host)) => {
            let user = user_info
                .split_once(':')
                .map_or(user_info, |(user, _)| user);
            let hidden = if user_info.contains(':') { ":***" } else { "" };
            format!("{scheme}://{user}{hidden}@{host}{path}")
        }
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::without_password;

    #[test]
    fn passwords_never_reach_the_page() {
        assert_eq!(
            without_password("postgres://app:s3cret@db:5432/orders"),
            "postgres://app:***@db:5432/orders"
        );
        assert_eq!(
            without_password("amqp://guest:guest@127.0.0.1:5672/%2f"),
            "amqp://guest:***@127.0.0.1:5672/%2f"
        );
        assert_eq!(
            without_password("postgres://app@db/orders"),
            "postgres://app@db/orders"
        );
        assert_eq!(
            without_password("mongodb://h:27017/?a=b@c"),
            "mongodb://h:27017/?a=b@c"
        );
    }
}
