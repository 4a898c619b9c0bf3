# bqcdc on Google Cloud: Debezium topics -> Pub/Sub push -> ingest function
# (Storage Write API) -> per-source changelog tables; Cloud Scheduler ->
# compact function -> state tables. The changelog, state and view tables
# are created by `bqcdc apply`, not here; this module creates the dataset and
# everything around it.

locals {
  labels = merge(var.labels, { app = "bqcdc" })

  # Repository root: its Go package imports every function package and embeds
  # sql/ and schemas/.
  source_dir = coalesce(var.source_dir, "${path.module}/..")

  # A changelog row becomes visible at most one ingest request after its
  # _cdc_ingested_at; 120 s more covers clock skew between instances.
  visibility_lag = "${var.ingest.timeout_seconds + 120}s"

  # The functions export their metrics to Cloud Monitoring (monitoring.tf).
  metrics_exporter = var.monitoring.export_metrics ? "gcp" : "none"

  pubsub_service_agent_member = "serviceAccount:service-${data.google_project.main.number}@gcp-sa-pubsub.iam.gserviceaccount.com"
  dead_letter_table           = "${var.project_id}.${google_bigquery_table.dead_letters.dataset_id}.${google_bigquery_table.dead_letters.table_id}"
}

data "google_project" "main" {
  project_id = var.project_id
}

# ---------------------------------------------------------------------------
# BigQuery
# ---------------------------------------------------------------------------

module "dataset" {
  source = "./modules/dataset"

  project_id                 = var.project_id
  dataset_id                 = var.dataset_id
  location                   = var.location
  labels                     = local.labels
  delete_contents_on_destroy = var.delete_contents_on_destroy
}

# Messages Pub/Sub gave up delivering (max_delivery_attempts reached), from
# every source, written by the dead-letter BigQuery subscriptions. The columns
# are the ones a BigQuery subscription with write_metadata = true and
# use_topic_schema = false writes. Failures the ingest function classifies as
# permanent never get here: it records them in _bqcdc_dead_letters itself.
resource "google_bigquery_table" "dead_letters" {
  project             = var.project_id
  dataset_id          = module.dataset.dataset_id
  table_id            = "pubsub_dead_letters"
  description         = "Pub/Sub dead letters of every bqcdc source (raw Avro payload plus delivery metadata), for inspection and replay."
  labels              = local.labels
  deletion_protection = var.deletion_protection

  time_partitioning {
    type  = "DAY"
    field = "publish_time"
    # null keeps dead letters; they hold whole payloads (personal data).
    expiration_ms = var.dead_letter_retention_days == null ? null : var.dead_letter_retention_days * 86400000
  }

  clustering = ["subscription_name"]

  # Pub/Sub allows 10,000 topics and 10,000 subscriptions per project;
  # checked here, at plan, as variables cannot check each other before
  # Terraform 1.9 (this table is in every deployment).
  lifecycle {
    precondition {
      condition     = length(var.sources) <= (var.dead_letter_topic_per_source ? 4999 : 9999)
      error_message = "Pub/Sub allows 10,000 topics and 10,000 subscriptions per project. Each source has a topic and a push subscription, and with dead_letter_topic_per_source = true (the default) a dead-letter topic and its BigQuery subscription too: at most 4,999 sources. Set dead_letter_topic_per_source = false (one dead-letter topic for all, up to 9,999 sources), or split the sources over projects."
    }
  }

  schema = jsonencode([
    { name = "subscription_name", type = "STRING", mode = "NULLABLE", description = "Dead-letter subscription that wrote the row (one per source, or the one the sources share)." },
    { name = "message_id", type = "STRING", mode = "NULLABLE", description = "Pub/Sub message id on the dead-letter topic." },
    { name = "publish_time", type = "TIMESTAMP", mode = "NULLABLE", description = "Time the message was published to the dead-letter topic." },
    { name = "data", type = "BYTES", mode = "NULLABLE", description = "Original message payload (Confluent-framed Avro)." },
    { name = "attributes", type = "STRING", mode = "NULLABLE", description = "JSON object of message attributes, including CloudPubSubDeadLetterSourceSubscription and friends." },
  ])
}

# ---------------------------------------------------------------------------
# Function source: one archive of the repository, shared by both functions.
# ---------------------------------------------------------------------------

data "archive_file" "source" {
  type        = "zip"
  source_dir  = local.source_dir
  excludes    = var.source_excludes
  output_path = "${path.module}/.build/bqcdc-source.zip"
}

resource "google_storage_bucket" "source" {
  project                     = var.project_id
  name                        = coalesce(var.source_bucket_name, "${var.project_id}-${var.name_prefix}-source")
  location                    = var.region
  labels                      = local.labels
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  # Holds only build inputs that Terraform re-uploads.
  force_destroy = true
}

resource "google_storage_bucket_object" "source" {
  bucket = google_storage_bucket.source.name
  # The hash in the name makes every code change a new object, hence a new
  # build of both functions; an unchanged tree keeps the same object.
  name   = "source/bqcdc-${data.archive_file.source.output_md5}.zip"
  source = data.archive_file.source.output_path
}

# ---------------------------------------------------------------------------
# Functions
# ---------------------------------------------------------------------------

locals {
  # The secrets the ingest function reads, by environment variable: its
  # secret_environment_variables and, from the same map, its accessor grants
  # (iam.tf), so every secret it reads is one it may read.
  ingest_secrets = {
    BQCDC_REGISTRY_URL      = { secret = var.registry_url_secret_id }
    BQCDC_REGISTRY_USERNAME = { secret = var.registry_username_secret_id }
    BQCDC_REGISTRY_PASSWORD = { secret = var.registry_password_secret_id }
    BQCDC_REPLAY_KEY        = { secret = var.replay_key_secret_id }
  }

  # The functions by role (the function and its Cloud Run service are named
  # PREFIX-ROLE), with what sets each apart: description, entry point,
  # runtime account, sizing, and the environment beyond what module.function
  # gives both.
  functions = {
    ingest = {
      description           = "bqcdc ingest: Debezium change events from Pub/Sub push into per-source changelog tables (Storage Write API)."
      entry_point           = "Ingest"
      service_account_email = google_service_account.ingest.email
      resources             = var.ingest
      environment_variables = {
        BQCDC_SCHEMA_EVOLUTION_OFF = join(",", sort([for name, s in var.sources : name if !s.schema_evolution]))
        BQCDC_LOG_VALUES           = tostring(var.log_row_values)
      }
      # Credentials only ever come from Secret Manager.
      secret_environment_variables = local.ingest_secrets
    }
    compact = {
      description           = "bqcdc compact: folds changelogs into state tables with BigQuery query jobs; called by Cloud Scheduler."
      entry_point           = "Compact"
      service_account_email = google_service_account.compact.email
      resources             = var.compact
      environment_variables = {
        BQCDC_VISIBILITY_LAG           = local.visibility_lag
        BQCDC_INGEST_TIMEOUT           = "${var.ingest.timeout_seconds}s"
        BQCDC_CHANGELOG_RETENTION_DAYS = tostring(var.changelog_retention_days)
        BQCDC_TOMBSTONE_RETENTION_DAYS = tostring(var.tombstone_retention_days)
        BQCDC_COMPACT_BUDGET           = "${var.compact.timeout_seconds - 60}s"
        BQCDC_COMPACT_CONCURRENCY      = tostring(var.compact.flow_concurrency)
        BQCDC_CHANGE_FEED_EVERY        = "${var.change_feed_every_minutes}m"
      }
      secret_environment_variables = {}
    }
  }
}

# Both functions are built from the one source archive, with the same
# runtime, ingress and build account.
module "function" {
  source   = "./modules/function"
  for_each = local.functions

  project_id                  = var.project_id
  region                      = var.region
  name                        = "${var.name_prefix}-${each.key}"
  description                 = each.value.description
  labels                      = local.labels
  entry_point                 = each.value.entry_point
  runtime                     = var.runtime
  source_bucket               = google_storage_bucket.source.name
  source_object               = google_storage_bucket_object.source.name
  service_account_email       = each.value.service_account_email
  build_service_account_email = var.build_service_account_email
  ingress_settings            = var.ingress_settings
  resources                   = each.value.resources

  # Both work on the one dataset, export metrics alike and read the append
  # ledger switch from the one variable (ingest writing the ledger and
  # compaction trusting it must agree).
  environment_variables = merge({
    BQCDC_PROJECT          = var.project_id
    BQCDC_DATASET          = module.dataset.dataset_id
    BQCDC_LOCATION         = module.dataset.location
    BQCDC_METRICS_EXPORTER = local.metrics_exporter
    BQCDC_APPEND_LEDGER    = tostring(var.append_ledger)
  }, each.value.environment_variables)

  secret_environment_variables = each.value.secret_environment_variables

  # A deployment of ingest whose runtime account cannot read the secrets
  # fails (compact, which reads none, waits for the grants too).
  depends_on = [google_secret_manager_secret_iam_member.ingest_reads_secrets]
}

# The functions were one module call each before.
moved {
  from = module.ingest_function
  to   = module.function["ingest"]
}

moved {
  from = module.compact_function
  to   = module.function["compact"]
}

# ---------------------------------------------------------------------------
# Sources: one module instance per Debezium topic, keyed by topic name.
# ---------------------------------------------------------------------------

module "source_topic" {
  source   = "./modules/source"
  for_each = var.sources

  project_id                       = var.project_id
  topic_name                       = each.key
  labels                           = merge(local.labels, each.value.labels)
  ingest_uri                       = module.function["ingest"].uri
  push_service_account_email       = google_service_account.push.email
  pubsub_service_agent_member      = local.pubsub_service_agent_member
  dead_letter_table                = local.dead_letter_table
  shared_dead_letter_topic         = var.dead_letter_topic_per_source ? null : google_pubsub_topic.shared_dead_letter[0].id
  ack_deadline_seconds             = var.ingest.timeout_seconds
  max_delivery_attempts            = coalesce(each.value.max_delivery_attempts, var.max_delivery_attempts)
  message_retention_duration       = each.value.message_retention_duration
  topic_message_retention_duration = each.value.topic_message_retention_duration
  enable_message_ordering          = each.value.enable_message_ordering

  # Pub/Sub checks its permissions when a subscription is created.
  depends_on = [
    google_bigquery_table_iam_member.pubsub_writes_dead_letters,
    google_service_account_iam_member.pubsub_mints_push_tokens,
    google_cloud_run_v2_service_iam_member.push_invokes_ingest,
    google_pubsub_topic_iam_member.shared_dead_letter_publisher,
  ]
}

# With dead_letter_topic_per_source = false: one dead-letter topic for every
# source, drained into the same table by one BigQuery subscription, so a
# deployment of N sources holds N + 1 topics and N + 1 subscriptions (Pub/Sub
# allows 10,000 of each per project) instead of 2N of each. A dead letter's
# source subscription is in its CloudPubSubDeadLetterSourceSubscription
# attribute (the table's attributes column).
resource "google_pubsub_topic" "shared_dead_letter" {
  count   = var.dead_letter_topic_per_source ? 0 : 1
  project = var.project_id
  name    = "${var.name_prefix}-dead-letters"
  labels  = local.labels
}

resource "google_pubsub_topic_iam_member" "shared_dead_letter_publisher" {
  count   = var.dead_letter_topic_per_source ? 0 : 1
  project = var.project_id
  topic   = google_pubsub_topic.shared_dead_letter[0].name
  role    = "roles/pubsub.publisher"
  member  = local.pubsub_service_agent_member
}

resource "google_pubsub_subscription" "shared_dead_letter_to_bigquery" {
  count   = var.dead_letter_topic_per_source ? 0 : 1
  project = var.project_id
  name    = "${var.name_prefix}-dead-letters-bq"
  topic   = google_pubsub_topic.shared_dead_letter[0].id
  labels  = local.labels

  bigquery_config {
    table            = local.dead_letter_table
    use_topic_schema = false
    write_metadata   = true
  }

  expiration_policy {
    ttl = ""
  }

  depends_on = [google_bigquery_table_iam_member.pubsub_writes_dead_letters]
}

# ---------------------------------------------------------------------------
# Compaction schedule
# ---------------------------------------------------------------------------

# One job per compaction shard; with one shard the job calls the plain URL.
module "scheduler" {
  source = "./modules/scheduler"
  count  = var.compact.shards

  project_id               = var.project_id
  region                   = var.region
  name                     = var.compact.shards == 1 ? "${var.name_prefix}-compact" : "${var.name_prefix}-compact-${count.index}"
  description              = "Runs bqcdc compaction (folds changelogs into state tables)${var.compact.shards == 1 ? "" : ", shard ${count.index} of ${var.compact.shards}"}."
  schedule                 = var.compaction_schedule
  time_zone                = var.compaction_time_zone
  target_uri               = var.compact.shards == 1 ? module.function["compact"].uri : "${module.function["compact"].uri}?shard=${count.index}&shards=${var.compact.shards}"
  audience                 = module.function["compact"].uri
  service_account_email    = google_service_account.scheduler.email
  attempt_deadline_seconds = var.compact.timeout_seconds

  depends_on = [google_cloud_run_v2_service_iam_member.scheduler_invokes_compact]
}

# The single job of earlier versions is shard 0 now.
moved {
  from = module.scheduler
  to   = module.scheduler[0]
}
