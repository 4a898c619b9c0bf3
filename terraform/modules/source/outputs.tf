output "topic_id" {
  description = "Id of the source topic (projects/PROJECT/topics/TOPIC): point Debezium's Pub/Sub sink at it."
  value       = google_pubsub_topic.main.id
}

output "dead_letter_topic_id" {
  description = "Id of the dead-letter topic (the shared one, when the deployment shares one)."
  value       = local.dead_letter_topic_id
}

output "subscription_id" {
  description = "Id of the push subscription that delivers the topic to the ingest function."
  value       = google_pubsub_subscription.ingest.id
}

output "dead_letter_subscription_id" {
  description = "Id of the BigQuery subscription that drains this source's dead-letter topic (null when the deployment shares one)."
  value       = one(google_pubsub_subscription.dead_letter_to_bigquery[*].id)
}

output "push_endpoint" {
  description = "URL the push subscription posts to (the ingest URL plus /projects/PROJECT/topics/TOPIC)."
  value       = local.push_endpoint
}
