# One CDC source: the Debezium topic, the push subscription that delivers it to
# the ingest function, and the dead-letter path (topic + BigQuery
# subscription) for messages the function keeps failing on.
#
# Why a Terraform-owned push subscription and not an Eventarc trigger: an
# Eventarc trigger creates its own Pub/Sub subscription, whose dead-letter
# policy can only be set out of band on that generated subscription, and a
# project holds at most 500 triggers per location (a fixed limit). A push
# subscription is what Eventarc would create anyway, but here its retry
# backoff, ack deadline, dead-letter topic and max_delivery_attempts are
# declared and reviewed like everything else. Pub/Sub allows 10,000 topics
# and 10,000 subscriptions per project: with a dead-letter topic and its
# BigQuery subscription per source (two of each) that is 4,999 sources;
# with var.shared_dead_letter_topic (one of each for the deployment, made
# by the root module), 9,999. 1000 Eventarc triggers would not fit at all
# (see terraform/README.md).
#
# The push endpoint ends in /projects/PROJECT/topics/TOPIC: the ingest
# function reads the plain Pub/Sub push body and takes the topic from that
# path, which is how it finds the changelog table of the message.
locals {
  push_endpoint = "${trimsuffix(var.ingest_uri, "/")}/projects/${var.project_id}/topics/${var.topic_name}"
  # This source's own dead-letter path, unless the deployment shares one.
  own_dead_letters     = var.shared_dead_letter_topic == null ? 1 : 0
  dead_letter_topic_id = var.shared_dead_letter_topic == null ? google_pubsub_topic.dead_letter[0].id : var.shared_dead_letter_topic
}

resource "google_pubsub_topic" "main" {
  project = var.project_id
  name    = var.topic_name
  labels  = var.labels

  message_retention_duration = var.topic_message_retention_duration
}

resource "google_pubsub_topic" "dead_letter" {
  count   = local.own_dead_letters
  project = var.project_id
  name    = "${var.topic_name}.dead-letter"
  labels  = var.labels
}

# Delivery to the ingest function. A non-2xx answer (the function returns an
# error only for failures a retry can fix) is retried with exponential backoff;
# after max_delivery_attempts the message goes to the dead-letter topic.
resource "google_pubsub_subscription" "ingest" {
  project = var.project_id
  name    = "${var.topic_name}.bqcdc-ingest"
  topic   = google_pubsub_topic.main.id
  labels  = var.labels

  # For push, the ack deadline is the HTTP request timeout: keep it at least
  # the function timeout so a slow request is not delivered a second time
  # while it is still running.
  ack_deadline_seconds       = var.ack_deadline_seconds
  message_retention_duration = var.message_retention_duration
  enable_message_ordering    = var.enable_message_ordering

  push_config {
    push_endpoint = local.push_endpoint

    oidc_token {
      service_account_email = var.push_service_account_email
      audience              = var.ingest_uri
    }
  }

  retry_policy {
    minimum_backoff = var.minimum_backoff
    maximum_backoff = var.maximum_backoff
  }

  dead_letter_policy {
    dead_letter_topic     = local.dead_letter_topic_id
    max_delivery_attempts = var.max_delivery_attempts
  }

  # Never delete the subscription for inactivity: a quiet table is normal.
  expiration_policy {
    ttl = ""
  }

  depends_on = [google_pubsub_topic_iam_member.dead_letter_publisher]
}

# Dead-lettering is done by the Pub/Sub service agent: it must publish to the
# dead-letter topic (a shared one: granted by the root module) and
# acknowledge (subscribe to) the source subscription.
resource "google_pubsub_topic_iam_member" "dead_letter_publisher" {
  count   = local.own_dead_letters
  project = var.project_id
  topic   = google_pubsub_topic.dead_letter[0].name
  role    = "roles/pubsub.publisher"
  member  = var.pubsub_service_agent_member
}

resource "google_pubsub_subscription_iam_member" "dead_letter_subscriber" {
  project      = var.project_id
  subscription = google_pubsub_subscription.ingest.name
  role         = "roles/pubsub.subscriber"
  member       = var.pubsub_service_agent_member
}

# Messages published to a topic without a subscription are lost, so the
# dead-letter topic is drained into BigQuery (one shared table per
# deployment). The payload is the original Avro bytes; the metadata columns
# carry the subscription, message id, publish time and attributes (including
# CloudPubSubDeadLetterSource* added by Pub/Sub), enough to replay a message.
resource "google_pubsub_subscription" "dead_letter_to_bigquery" {
  count   = local.own_dead_letters
  project = var.project_id
  name    = "${var.topic_name}.dead-letter-bq"
  topic   = google_pubsub_topic.dead_letter[0].id
  labels  = var.labels

  message_retention_duration = var.message_retention_duration

  bigquery_config {
    table            = var.dead_letter_table
    use_topic_schema = false
    write_metadata   = true
  }

  expiration_policy {
    ttl = ""
  }
}
