output "dataset_id" {
  description = "BigQuery dataset of bqcdc (pass it to `bqcdc apply --dataset`)."
  value       = module.dataset.dataset_id
}

output "location" {
  description = "BigQuery location of the dataset (pass it to `bqcdc apply --location`)."
  value       = module.dataset.location
}

output "dead_letter_table_id" {
  description = "Table receiving Pub/Sub dead letters, as PROJECT.DATASET.TABLE."
  value       = local.dead_letter_table
}

output "ingest_function_name" {
  description = "Name of the ingest function."
  value       = module.function["ingest"].name
}

output "ingest_function_uri" {
  description = "URL of the ingest function (internal ingress; push target)."
  value       = module.function["ingest"].uri
}

output "ingest_service_name" {
  description = "Cloud Run service that runs the ingest function: where its billing setting lives (`gcloud run services update NAME --no-cpu-throttling` selects instance-based billing, see README, Billing mode)."
  value       = module.function["ingest"].service_name
}

output "compact_function_name" {
  description = "Name of the compact function."
  value       = module.function["compact"].name
}

output "compact_function_uri" {
  description = "URL of the compact function (internal ingress; scheduler target)."
  value       = module.function["compact"].uri
}

output "topic_ids" {
  description = "Source topic ids by source name: configure Debezium Server's Pub/Sub sink to publish there."
  value       = { for name, s in module.source_topic : name => s.topic_id }
}

output "dead_letter_topic_ids" {
  description = "Dead-letter topic ids by source name."
  value       = { for name, s in module.source_topic : name => s.dead_letter_topic_id }
}

output "subscription_ids" {
  description = "Push subscription ids (delivery to the ingest function) by source name."
  value       = { for name, s in module.source_topic : name => s.subscription_id }
}

output "dead_letter_subscription_ids" {
  description = "Dead-letter BigQuery subscription ids by source name."
  value       = { for name, s in module.source_topic : name => s.dead_letter_subscription_id }
}

output "scheduler_job_name" {
  description = "Names of the Cloud Scheduler jobs that trigger compaction, comma-separated (one per shard)."
  value       = join(",", module.scheduler[*].name)
}

output "service_account_emails" {
  description = "Service accounts created for bqcdc, by role."
  value = {
    ingest    = google_service_account.ingest.email
    compact   = google_service_account.compact.email
    push      = google_service_account.push.email
    scheduler = google_service_account.scheduler.email
  }
}

output "registry_url_secret_id" {
  description = "Secret id (not value) of the registry URL, for tools such as scripts/deploy.sh that run `bqcdc apply`."
  value       = var.registry_url_secret_id
}

output "registry_username_secret_id" {
  description = "Secret id (not value) of the registry user name."
  value       = var.registry_username_secret_id
}

output "replay_key_secret_id" {
  description = "Secret id (not value) of the replay key: `bqcdc replay` needs its value in BQCDC_REPLAY_KEY."
  value       = var.replay_key_secret_id
}

output "dead_letter_retention_days" {
  description = "Days dead letters are kept, 0 for ever: pass it to `bqcdc apply --dead-letter-retention-days` (scripts/deploy.sh and cloudbuild.yaml do)."
  value       = coalesce(var.dead_letter_retention_days, 0)
}

output "registry_password_secret_id" {
  description = "Secret id (not value) of the registry password."
  value       = var.registry_password_secret_id
}

output "dashboard_id" {
  description = "Cloud Monitoring dashboard of the deployment (null when var.monitoring.dashboard is false)."
  value       = one(google_monitoring_dashboard.bqcdc[*].id)
}
