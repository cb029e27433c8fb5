//! A client for a local SQS stand-in.

use aws_sdk_sqs::Client;
use aws_sdk_sqs::config::{BehaviorVersion, Credentials, Region};

/// A client for an SQS-compatible server at `endpoint_url` (moto,
/// LocalStack, ElasticMQ): region `us-east-1`, static credentials
/// `test`/`test`. Against AWS, build the client from your AWS config
/// instead (`aws_sdk_sqs::Client::new(&sdk_config)`).
pub fn local_client(endpoint_url: &str) -> Client {
    let config = aws_sdk_sqs::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .endpoint_url(endpoint_url)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new(
            "test",
            "test",
            None,
            None,
            "tidings-local",
        ))
        .build();
    Client::from_conf(config)
}
