# ---------------------------------------------------------------------------
# Where
# ---------------------------------------------------------------------------

variable "project_id" {
  type        = string
  description = "Google Cloud project that hosts bqcdc (topics, functions, dataset)."
}

variable "region" {
  type        = string
  description = "Region of the functions, the scheduler job and the source bucket, e.g. europe-west1. Pick one inside (or close to) the dataset location."
}

variable "location" {
  type        = string
  description = "BigQuery location of the dataset (US, EU or a region). Passed to the functions and to `bqcdc apply` as BQCDC_LOCATION / --location."
  default     = "US"
}

variable "dataset_id" {
  type        = string
  description = "BigQuery dataset that holds all bqcdc tables. The same value must be passed to `bqcdc apply --dataset`."
  default     = "bqcdc"

  validation {
    condition     = can(regex("^[A-Za-z0-9_]+$", var.dataset_id)) && length(var.dataset_id) <= 1024
    error_message = "dataset_id may contain only letters, digits and underscores."
  }
}

variable "name_prefix" {
  type        = string
  description = "Prefix of the function, service account, scheduler job and bucket names; change it to run several deployments in one project."
  default     = "bqcdc"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{1,18}[a-z0-9]$", var.name_prefix))
    error_message = "name_prefix must be 3-20 lowercase letters, digits or hyphens, start with a letter and end with a letter or digit (service account ids are limited to 30 characters)."
  }
}

variable "labels" {
  type        = map(string)
  description = "Labels added to every labelled resource (app = \"bqcdc\" is always set)."
  default     = {}
}

# ---------------------------------------------------------------------------
# Sources
# ---------------------------------------------------------------------------

variable "sources" {
  type = map(object({
    labels                           = optional(map(string), {})
    max_delivery_attempts            = optional(number)
    message_retention_duration       = optional(string, "604800s")
    topic_message_retention_duration = optional(string)
    enable_message_ordering          = optional(bool, false)
    schema_evolution                 = optional(bool, true)
    freshness_seconds                = optional(number)
  }))
  description = <<-EOT
    Debezium topics to ingest, keyed by topic name (the `FROM STREAM(...)` name of the flows in sql/flows).
    Each gets a Pub/Sub topic, a push subscription to the ingest function, a dead-letter topic and a BigQuery
    subscription that drains it. Every key must be a source of some flow, and every flow source must be a key:
    ingest writes to the changelog table that `bqcdc apply` creates for the source.
    max_delivery_attempts (5-100) overrides var.max_delivery_attempts for one topic.
    schema_evolution = false keeps the topic's changelog columns as `bqcdc apply` made them: values of fields a newer
    writer schema adds are dropped and counted instead of added as columns (BQCDC_SCHEMA_EVOLUTION_OFF).
    freshness_seconds overrides var.monitoring.freshness_seconds for the topic's freshness alert (its flows are as
    fresh as it is).
  EOT
  default     = {}

  validation {
    condition = alltrue([
      for name in keys(var.sources) :
      can(regex("^[A-Za-z][A-Za-z0-9._-]{2,199}$", name)) && !startswith(lower(name), "goog")
    ])
    error_message = "Source topic names must start with a letter, use only letters, digits, '.', '_' and '-', be 3-200 characters and not start with \"goog\"."
  }

  validation {
    condition = alltrue([
      for s in values(var.sources) :
      s.max_delivery_attempts == null || (coalesce(s.max_delivery_attempts, 5) >= 5 && coalesce(s.max_delivery_attempts, 5) <= 100)
    ])
    error_message = "sources[*].max_delivery_attempts must be between 5 and 100."
  }

  # The topics with schema_evolution = false reach the ingest function as
  # one environment variable, and a function's environment (names and
  # values) is limited to 32 KiB; 24 KiB leaves room for the others. 500
  # topics of 40 characters fit.
  validation {
    condition     = length(join(",", [for name, s in var.sources : name if s.schema_evolution == false])) <= 24576
    error_message = "The topics with schema_evolution = false, joined with commas, exceed 24 KiB: they are passed to the ingest function in one environment variable (BQCDC_SCHEMA_EVOLUTION_OFF), and a function's environment is limited to 32 KiB. Turn schema evolution off for fewer topics."
  }
}

variable "pubsub_schemas" {
  type        = set(string)
  description = "Ids of the Pub/Sub schemas (in project_id) of source topics that carry a Pub/Sub schema (messages encoded by Pub/Sub, with googclient_schema* attributes) instead of Confluent-framed Avro. The ingest account gets roles/pubsub.viewer on each of these schemas only (it holds pubsub.schemas.get), so it can fetch their revisions; never on the project. Replaces pubsub_schema_encoded, which granted the role project-wide."
  default     = []

  validation {
    condition     = alltrue([for s in var.pubsub_schemas : can(regex("^[A-Za-z][A-Za-z0-9._~+%-]{2,254}$", s))])
    error_message = "pubsub_schemas must hold schema ids (a letter, then letters, digits and - _ . ~ + %, 3-255 characters), not projects/.../schemas/... paths."
  }
}

variable "max_delivery_attempts" {
  type        = number
  description = "Push deliveries of a message before Pub/Sub moves it to the source's dead-letter topic (5-100). The ingest function acknowledges permanent failures itself (they land in _bqcdc_dead_letters), so only retryable failures (a BigQuery or registry outage) reach this bound; with the default backoff (10 s growing to 600 s) 10 attempts span roughly 40 minutes."
  default     = 10

  validation {
    condition     = var.max_delivery_attempts >= 5 && var.max_delivery_attempts <= 100
    error_message = "max_delivery_attempts must be between 5 and 100."
  }
}

# ---------------------------------------------------------------------------
# Schema Registry credentials: Secret Manager ids only, never values.
# ---------------------------------------------------------------------------

variable "registry_url_secret_id" {
  type        = string
  description = "Id (not value) of the Secret Manager secret, in project_id, whose latest version is the Schema Registry URL. Exposed to the ingest function as BQCDC_REGISTRY_URL."

  validation {
    condition     = can(regex("^[A-Za-z0-9_-]{1,255}$", var.registry_url_secret_id))
    error_message = "registry_url_secret_id must be a Secret Manager secret id (letters, digits, '_' and '-'), not a URL or a secret value."
  }
}

variable "registry_username_secret_id" {
  type        = string
  description = "Id (not value) of the Secret Manager secret holding the Schema Registry user name (BQCDC_REGISTRY_USERNAME)."

  validation {
    condition     = can(regex("^[A-Za-z0-9_-]{1,255}$", var.registry_username_secret_id))
    error_message = "registry_username_secret_id must be a Secret Manager secret id (letters, digits, '_' and '-')."
  }
}

variable "registry_password_secret_id" {
  type        = string
  description = "Id (not value) of the Secret Manager secret holding the Schema Registry password or API secret (BQCDC_REGISTRY_PASSWORD)."

  validation {
    condition     = can(regex("^[A-Za-z0-9_-]{1,255}$", var.registry_password_secret_id))
    error_message = "registry_password_secret_id must be a Secret Manager secret id (letters, digits, '_' and '-')."
  }
}

# ---------------------------------------------------------------------------
# Replay key: a Secret Manager id only, never the value.
# ---------------------------------------------------------------------------

variable "replay_key_secret_id" {
  type        = string
  description = "Id (not value) of the Secret Manager secret, in project_id, holding the replay key (at least 32 bytes, e.g. `openssl rand -base64 32`). Exposed to the ingest function as BQCDC_REPLAY_KEY: it honours the bqcdc-replay-of attribute only on messages `bqcdc replay` signed with this key (run replay with the same value in BQCDC_REPLAY_KEY). Only the ingest account may read it."

  validation {
    condition     = can(regex("^[A-Za-z0-9_-]{1,255}$", var.replay_key_secret_id))
    error_message = "replay_key_secret_id must be a Secret Manager secret id (letters, digits, '_' and '-'), not the key."
  }
}

# ---------------------------------------------------------------------------
# Personal data in logs and dead letters
# ---------------------------------------------------------------------------

variable "log_row_values" {
  type        = bool
  description = "Let dead-letter reasons and the ingest function's log lines quote values of the row (a refused timestamp's text, BigQuery's message about a row): BQCDC_LOG_VALUES. false (the default) names the column and the kind of problem with [value withheld] in place of the value; the dead letter keeps the message's bytes either way."
  default     = false
}

variable "dead_letter_topic_per_source" {
  type        = bool
  description = "Give each source its own dead-letter topic and BigQuery subscription (true, the default), or share one of each across the deployment (false). Pub/Sub allows 10,000 topics and 10,000 subscriptions per project: per source that is at most 4,999 sources, shared 9,999. A dead letter's source subscription is in its CloudPubSubDeadLetterSourceSubscription attribute either way."
  default     = true
}

variable "append_ledger" {
  type        = bool
  description = "Ingest covers each source in the append ledger (_bqcdc_appends) before appending its rows, and compaction tells the flows with rows to fold from one query of it and a listing of the datasets, instead of reading every changelog's and state table's metadata each run (BQCDC_APPEND_LEDGER, set on both functions). Compaction trusts the ledger an hour after bqcdc apply made it. Turn it off only with both functions."
  default     = true
}

variable "dead_letter_retention_days" {
  type        = number
  description = <<-EOT
    Days dead letters are kept: the partition expiration of pubsub_dead_letters (set here) and of _bqcdc_dead_letters
    (set by `bqcdc apply --dead-letter-retention-days`, which scripts/deploy.sh and cloudbuild.yaml pass from the output of
    the same name). Dead letters hold whole payloads, personal data included. null (the default) keeps them forever.
    Replay a dead letter before it expires.
  EOT
  default     = null

  validation {
    condition     = var.dead_letter_retention_days == null || try(var.dead_letter_retention_days >= 1 && var.dead_letter_retention_days <= 36500 && floor(var.dead_letter_retention_days) == var.dead_letter_retention_days, false)
    error_message = "dead_letter_retention_days must be null (keep) or a whole number of days from 1 to 36500."
  }
}

variable "snapshot_tables" {
  type        = set(string)
  description = <<-EOT
    The tables of snapshots that AUTO CDC FROM SNAPSHOT flows read, as "dataset.table" in var.project_id (the
    FROM name of each snapshot flow in sql/flows). The compact function's account gets roles/bigquery.dataViewer on
    each table, and nothing else outside its own dataset. Users querying a snapshot flow's view also need read access
    to its table (a view runs with the caller's permissions unless it is authorized on the table's dataset).
  EOT
  default     = []

  validation {
    condition = alltrue([
      for t in var.snapshot_tables : can(regex("^[A-Za-z0-9_]+\\.[^.`]+$", t)) && length(t) <= 2049
    ])
    error_message = "snapshot_tables entries must be dataset.table (a dataset name is letters, digits and underscores; the project is var.project_id)."
  }
}

# ---------------------------------------------------------------------------
# Functions
# ---------------------------------------------------------------------------

variable "runtime" {
  type        = string
  description = "Cloud Run functions Go runtime for both functions (go125 or newer)."
  default     = "go125"
}

variable "source_dir" {
  type        = string
  description = "Directory zipped as the functions' source: the repository root (default), whose Go package imports both function packages and embeds sql/ and schemas/."
  default     = null
}

variable "source_excludes" {
  type        = list(string)
  description = "Paths, relative to source_dir, left out of the source archive: VCS data, Terraform working files and state (everything under terraform/, including the archive itself), build output and scripts."
  default     = [".git", ".github", "terraform", "build", "scripts", "tmp", "bqcdc", "cloudbuild.yaml"]
}

variable "source_bucket_name" {
  type        = string
  description = "Name of the bucket created for the source archive; null derives PROJECT-PREFIX-source."
  default     = null
}

variable "build_service_account_email" {
  type        = string
  description = "Service account Cloud Build uses to build both functions, or null for the project default (see README: projects created after mid-2024 may need one)."
  default     = null
}

variable "ingress_settings" {
  type        = string
  description = "Ingress of both functions. The default, ALLOW_INTERNAL_ONLY, admits Pub/Sub push and Cloud Scheduler from the same project and nothing from the internet; IAM (roles/run.invoker) is enforced in any case."
  default     = "ALLOW_INTERNAL_ONLY"
}

variable "ingest" {
  type = object({
    memory                  = optional(string, "512Mi")
    cpu                     = optional(string, "1")
    timeout_seconds         = optional(number, 60)
    max_request_concurrency = optional(number, 80)
    min_instance_count      = optional(number, 0)
    max_instance_count      = optional(number, 100)
  })
  description = <<-EOT
    Sizing of the ingest function. Rationale for the defaults (terraform/README.md, Sizing, has the details):
    - max_request_concurrency 80: a request is one Pub/Sub message and spends almost all of its time waiting for the
      Storage Write API append (the CPU per message is about 0.1-0.2 ms). The rows of concurrent requests for the same
      table share one AppendRows call (at most 500 rows, 8 MiB, 4 appends in flight per table), so more requests per
      instance mean fewer appends per message and fewer instances. Measured with BenchmarkFunction (5 ms fake append):
      0.37 appends per message at 16, 0.08 at 80. 80 is also Cloud Run's own default concurrency.
      Raise it (up to 1000) when append latency is high and instances stay CPU-idle; lower it when instances run
      near 100% CPU (p99 latency grows) or memory.
    - cpu 1: Cloud Run requires at least 1 vCPU for concurrency above 1 (and for instance-based billing).
    - memory 512Mi: the function admits at most 192 MiB of requests per instance, each weighed by its push body plus the
      decoded-size budget of a message that size (requests beyond that wait); 80 typical Debezium events of a few KB weigh
      about 40 MiB, the largest message 80 MiB, and with Go's default GC target the heap stays under 2 x (192 + ~30) MiB.
    - timeout_seconds 60: an append normally takes well under a second; 60 s bounds a stuck request. It is also the push
      ack deadline (at most 600) and sets BQCDC_VISIBILITY_LAG of the compact function (timeout + 120 s).
    - max_instance_count 100: caps cost and the number of concurrent Storage Write API connections.
    Billing: Cloud Run's instance-based billing (no per-request fee) cannot be set on a google_cloudfunctions2_function;
    see terraform/README.md, Billing mode, for the gcloud step.
  EOT
  default     = {}

  validation {
    condition     = var.ingest.timeout_seconds >= 10 && var.ingest.timeout_seconds <= 600
    error_message = "ingest.timeout_seconds must be between 10 and 600 (it is also the Pub/Sub push ack deadline)."
  }
}

variable "compact" {
  type = object({
    memory                  = optional(string, "512Mi")
    cpu                     = optional(string, "1")
    timeout_seconds         = optional(number, 540)
    max_request_concurrency = optional(number, 2)
    min_instance_count      = optional(number, 0)
    max_instance_count      = optional(number, 1)
    shards                  = optional(number, 1)
    flow_concurrency        = optional(number, 8)
  })
  description = <<-EOT
    Sizing of the compact function. It only submits BigQuery query jobs and waits for them, so data never flows
    through it: 512Mi and 1 vCPU are ample. timeout_seconds 540 keeps a run shorter than the default 10-minute
    schedule, so runs do not overlap; it is also the scheduler attempt deadline (at most 1800), and a run starts no
    flow after timeout - 60 s (BQCDC_COMPACT_BUDGET): the flows left are reported deferred and go first next time.
    flow_concurrency 8 flows fold at once per run (BQCDC_COMPACT_CONCURRENCY), each holding one query job at a time.
    shards splits the sources into that many shards, one Cloud Scheduler job each (calling ?shard=i&shards=n): use it
    when one run's budget cannot cover every flow that changes in a period (an idle flow costs no query and, with the
    append ledger, no read of its own: a share of a dataset listing). max_request_concurrency x max_instance_count must be at least shards, so the shards' runs fit;
    the default 2 x 1 lets a manual run share the single instance instead of failing with 429.
  EOT
  default     = {}

  validation {
    condition     = var.compact.timeout_seconds >= 120 && var.compact.timeout_seconds <= 1800
    error_message = "compact.timeout_seconds must be between 120 and 1800 (the Cloud Scheduler HTTP attempt deadline range; a run keeps its last minute for the flows it started)."
  }

  validation {
    condition     = var.compact.shards >= 1 && var.compact.shards <= 100 && var.compact.shards <= var.compact.max_request_concurrency * var.compact.max_instance_count
    error_message = "compact.shards must be between 1 and 100, and at most max_request_concurrency x max_instance_count, so every shard's run finds room."
  }

  validation {
    condition     = var.compact.flow_concurrency >= 1 && var.compact.flow_concurrency <= 50
    error_message = "compact.flow_concurrency must be between 1 and 50 (BigQuery runs up to 100 interactive queries per project at once)."
  }
}

# ---------------------------------------------------------------------------
# Compaction
# ---------------------------------------------------------------------------

variable "compaction_schedule" {
  type        = string
  description = "Cron schedule (unix-cron) of the compaction runs. Views read the state tables plus the changelog tail, so a longer interval only means more changelog scanned per query."
  default     = "*/10 * * * *"
}

variable "compaction_time_zone" {
  type        = string
  description = "Time zone of compaction_schedule."
  default     = "Etc/UTC"
}

variable "changelog_retention_days" {
  type        = number
  description = <<-EOT
    Days the compact function keeps changelog partitions after they have been folded into the state tables
    (BQCDC_CHANGELOG_RETENTION_DAYS); 0 keeps them forever. The compact function deletes old partitions itself, and
    only those it has already compacted. That is why the dataset has no default_partition_expiration_ms: a blind
    expiration would go on dropping partitions if compaction stopped running, losing changes never folded.
  EOT
  default     = 0

  validation {
    condition     = var.changelog_retention_days >= 0 && var.changelog_retention_days <= 36500 && floor(var.changelog_retention_days) == var.changelog_retention_days
    error_message = "changelog_retention_days must be a whole number of days from 0 to 36500 (the compact function refuses more: days become a duration that would overflow)."
  }
}

variable "change_feed_every_minutes" {
  type        = number
  description = "Materialize each flow's change feed (<target>_changes) only once it lags this many minutes (0: every compaction run; BQCDC_CHANGE_FEED_EVERY). The feed's statement reads the state blocks of the keys its range touches: at high churn, most of the state, so fewer, longer ranges cost less; the feed trails the views by up to this."
  default     = 0

  validation {
    condition     = var.change_feed_every_minutes >= 0 && var.change_feed_every_minutes <= 10080 && floor(var.change_feed_every_minutes) == var.change_feed_every_minutes
    error_message = "change_feed_every_minutes must be a whole number of minutes from 0 to 10080 (a week)."
  }
}

variable "tombstone_retention_days" {
  type        = number
  description = "Days the compact function keeps delete markers (tombstones) before purging them (BQCDC_TOMBSTONE_RETENTION_DAYS)."
  default     = 30

  validation {
    condition     = var.tombstone_retention_days >= 0 && var.tombstone_retention_days <= 36500 && floor(var.tombstone_retention_days) == var.tombstone_retention_days
    error_message = "tombstone_retention_days must be a whole number of days from 0 to 36500 (the compact function refuses more: days become a duration that would overflow)."
  }
}

# ---------------------------------------------------------------------------
# Destroy behaviour
# ---------------------------------------------------------------------------

variable "delete_contents_on_destroy" {
  type        = bool
  description = "Allow `terraform destroy` to delete the dataset together with the tables `bqcdc apply` created in it (changelogs, state tables, views). false keeps your data: destroy then fails on a non-empty dataset."
  default     = false
}

variable "deletion_protection" {
  type        = bool
  description = "Protect the pubsub_dead_letters table from `terraform destroy` (set false, apply, then destroy to remove it)."
  default     = true
}

# ---------------------------------------------------------------------------
# Monitoring
# ---------------------------------------------------------------------------

variable "monitoring" {
  type = object({
    export_metrics            = optional(bool, true)
    dashboard                 = optional(bool, true)
    alerts                    = optional(bool, true)
    email_addresses           = optional(list(string), [])
    freshness_seconds         = optional(number, 900)
    backlog_age_seconds       = optional(number, 600)
    compaction_absent_seconds = optional(number, 3600)
    unfolded_age_seconds      = optional(number, 3600)
    function_errors_per_5m    = optional(number, 10)
  })
  description = <<-EOT
    Metrics, dashboard and alert policies (monitoring.tf; docs/operating.md, Runbook).
    export_metrics: the functions export their metrics to Cloud Monitoring (BQCDC_METRICS_EXPORTER=gcp; their accounts
    get roles/monitoring.metricWriter) and the metric descriptors are declared here. Alerts on those metrics need it.
    email_addresses: an email notification channel is created for each (besides var.notification_channels).
    Thresholds: freshness_seconds (a source's publish -> append p99 or its oldest unacknowledged push message; per
    source: sources[*].freshness_seconds), backlog_age_seconds (any bqcdc subscription), compaction_absent_seconds (no
    compaction run reported), unfolded_age_seconds (how long a flow's changes may have waited to
    be folded; 0 when nothing waits, about the visibility lag after a compaction), function_errors_per_5m (5xx answers of both functions).
  EOT
  default     = {}

  validation {
    condition     = var.monitoring.compaction_absent_seconds >= 600 && var.monitoring.freshness_seconds > 0 && var.monitoring.backlog_age_seconds > 0
    error_message = "monitoring.compaction_absent_seconds must be at least 600 (one scheduled run), and the other thresholds positive."
  }
}

variable "notification_channels" {
  type        = list(string)
  description = "Notification channel ids (projects/PROJECT/notificationChannels/ID) every bqcdc alert policy notifies."
  default     = []
}
