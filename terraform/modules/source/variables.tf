variable "project_id" {
  type        = string
  description = "Project of the topics and subscriptions (the same project as the ingest function, so its internal-only ingress admits Pub/Sub push)."
}

variable "topic_name" {
  type        = string
  description = "Debezium topic name (the source), e.g. dbserver1.inventory.customers. Also the prefix of the dead-letter topic and the subscription names."

  validation {
    condition     = can(regex("^[A-Za-z][A-Za-z0-9._-]{2,199}$", var.topic_name)) && !startswith(lower(var.topic_name), "goog")
    error_message = "topic_name must start with a letter, use only letters, digits, '.', '_' and '-', be 3-200 characters long and not start with \"goog\"."
  }
}

variable "labels" {
  type        = map(string)
  description = "Labels applied to the topics and subscriptions."
  default     = {}
}

variable "ingest_uri" {
  type        = string
  description = "HTTPS URL of the ingest function's Cloud Run service (also the OIDC audience of the push requests)."

  validation {
    condition     = startswith(var.ingest_uri, "https://")
    error_message = "ingest_uri must be an https:// URL."
  }
}

variable "push_service_account_email" {
  type        = string
  description = "Service account whose OIDC token Pub/Sub attaches to push requests; it must hold roles/run.invoker on the ingest service."
}

variable "pubsub_service_agent_member" {
  type        = string
  description = "IAM member of the project's Pub/Sub service agent (serviceAccount:service-NUMBER@gcp-sa-pubsub.iam.gserviceaccount.com), which forwards dead letters."
}

variable "shared_dead_letter_topic" {
  type        = string
  description = "Id of a dead-letter topic shared by every source (projects/PROJECT/topics/TOPIC), drained and granted by the root module; null (the default) gives this source its own dead-letter topic and BigQuery subscription."
  default     = null
}

variable "dead_letter_table" {
  type        = string
  description = "Table written by the dead-letter BigQuery subscription, as PROJECT.DATASET.TABLE. Its schema must have the write_metadata columns (subscription_name, message_id, publish_time, data, attributes)."

  validation {
    condition     = length(split(".", var.dead_letter_table)) == 3
    error_message = "dead_letter_table must be PROJECT.DATASET.TABLE."
  }
}

variable "ack_deadline_seconds" {
  type        = number
  description = "Push request timeout in seconds (10-600): the ingest function timeout (the root module's var.ingest.timeout_seconds, which it validates), so Pub/Sub does not redeliver a message while its request is still running."
}

variable "max_delivery_attempts" {
  type        = number
  description = "Delivery attempts (5-100; the root module's var.max_delivery_attempts and sources[*].max_delivery_attempts, which it validates) before Pub/Sub moves a message to the dead-letter topic. The ingest function acknowledges permanent failures itself (into _bqcdc_dead_letters), so this only bounds retryable failures such as BigQuery outages."
}

variable "minimum_backoff" {
  type        = string
  description = "Minimum delay between redeliveries of a failed message (Pub/Sub duration, 0s-600s)."
  default     = "10s"
}

variable "maximum_backoff" {
  type        = string
  description = "Maximum delay between redeliveries of a failed message (Pub/Sub duration, 0s-600s)."
  default     = "600s"
}

variable "message_retention_duration" {
  type        = string
  description = "How long the subscriptions keep unacknowledged messages (10m to 7d, e.g. \"604800s\", the default of the root module's sources[*].message_retention_duration): the time you have to fix an outage before changes are lost."
}

variable "topic_message_retention_duration" {
  type        = string
  description = "Optional retention of published messages on the source topic itself (enables seeking a new subscription back in time); null keeps none. Billed as storage."
  default     = null
}

variable "enable_message_ordering" {
  type        = bool
  description = "Deliver messages with the same ordering key in order. Not needed for correctness (compaction orders changes by _cdc_sequence) and it limits push throughput per key, so the root module's sources[*].enable_message_ordering is off by default."
}
