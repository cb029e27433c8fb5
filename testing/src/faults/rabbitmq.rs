//! Closing a RabbitMQ connection by its name, from the broker's side.

use std::time::Duration;

use tokio::process::Command;

/// Closes the RabbitMQ connection whose `connection_name` client property is `name`
/// with `rabbitmqctl close_connection`, touching no other connection.
pub async fn close_rabbitmq_connection(name: &str) {
    let pid = find_connection(name).await;
    let status = Command::new("rabbitmqctl")
        .args(["close_connection", &pid, "closed by a fault-injection test"])
        .status()
        .await
        .expect("run rabbitmqctl close_connection");
    assert!(
        status.success(),
        "rabbitmqctl close_connection {pid} failed"
    );
}

/// How many open RabbitMQ connections have the `connection_name` client
/// property `name`.
pub async fn rabbitmq_connections_named(name: &str) -> usize {
    let quoted = format!("\"{name}\"");
    connection_listing()
        .await
        .lines()
        .filter(|line| line.contains(&quoted))
        .count()
}

/// `rabbitmqctl list_connections`, a line per connection: its pid, then
/// its client properties.
async fn connection_listing() -> String {
    let output = Command::new("rabbitmqctl")
        .args([
            "list_connections",
            "--quiet",
            "--no-table-headers",
            "pid",
            "client_properties",
        ])
        .output()
        .await
        .expect("run rabbitmqctl list_connections");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The pid of the connection named `name`, waiting for it to show.
async fn find_connection(name: &str) -> String {
    for _ in 0..50 {
        let listing = connection_listing().await;
        let quoted = format!("\"{name}\"");
        if let Some(line) = listing.lines().find(|line| line.contains(&quoted)) {
            return line
                .split_whitespace()
                .next()
                .expect("pid column")
                .to_owned();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("no connection named {name} found");
}
