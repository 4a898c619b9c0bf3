output "dataset_id" {
  description = "BigQuery dataset of the demo."
  value       = module.bqcdc.dataset_id
}

output "location" {
  description = "BigQuery location of the dataset."
  value       = module.bqcdc.location
}

output "ingest_function_name" {
  description = "Name of the ingest function."
  value       = module.bqcdc.ingest_function_name
}

output "ingest_function_uri" {
  description = "URL of the ingest function."
  value       = module.bqcdc.ingest_function_uri
}

output "ingest_service_name" {
  description = "Cloud Run service of the ingest function (for its billing setting, see the root module's README)."
  value       = module.bqcdc.ingest_service_name
}

output "compact_function_name" {
  description = "Name of the compact function."
  value       = module.bqcdc.compact_function_name
}

output "compact_function_uri" {
  description = "URL of the compact function."
  value       = module.bqcdc.compact_function_uri
}

output "topic_ids" {
  description = "Topics Debezium must publish to, by source name."
  value       = module.bqcdc.topic_ids
}

output "dead_letter_topic_ids" {
  description = "Dead-letter topics by source name."
  value       = module.bqcdc.dead_letter_topic_ids
}

output "subscription_ids" {
  description = "Push subscriptions by source name."
  value       = module.bqcdc.subscription_ids
}

output "dead_letter_subscription_ids" {
  description = "Dead-letter BigQuery subscriptions by source name."
  value       = module.bqcdc.dead_letter_subscription_ids
}

output "dead_letter_table_id" {
  description = "Table receiving Pub/Sub dead letters."
  value       = module.bqcdc.dead_letter_table_id
}

output "scheduler_job_name" {
  description = "Cloud Scheduler job that triggers compaction."
  value       = module.bqcdc.scheduler_job_name
}

output "registry_url_secret_id" {
  description = "Secret id (not value) of the registry URL, read by scripts/deploy.sh."
  value       = module.bqcdc.registry_url_secret_id
}

output "registry_username_secret_id" {
  description = "Secret id (not value) of the registry user name."
  value       = module.bqcdc.registry_username_secret_id
}

output "registry_password_secret_id" {
  description = "Secret id (not value) of the registry password."
  value       = module.bqcdc.registry_password_secret_id
}

output "replay_key_secret_id" {
  description = "Secret id (not value) of the replay key (BQCDC_REPLAY_KEY for `bqcdc replay`)."
  value       = module.bqcdc.replay_key_secret_id
}

output "dead_letter_retention_days" {
  description = "Days dead letters are kept, 0 for ever (bqcdc apply --dead-letter-retention-days)."
  value       = module.bqcdc.dead_letter_retention_days
}
