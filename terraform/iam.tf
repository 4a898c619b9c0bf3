# Identities and grants. One service account per role, each granted only what
# it uses, on the narrowest resource that carries the permission. No basic
# roles (owner/editor/viewer) anywhere: terraform_test.go enforces it.

resource "google_service_account" "ingest" {
  project      = var.project_id
  account_id   = "${var.name_prefix}-ingest"
  display_name = "bqcdc ingest function"
  description  = "Runtime identity of the ingest function: appends to changelog tables, reads the registry secrets."
}

resource "google_service_account" "compact" {
  project      = var.project_id
  account_id   = "${var.name_prefix}-compact"
  display_name = "bqcdc compact function"
  description  = "Runtime identity of the compact function: runs query jobs on the bqcdc dataset."
}

resource "google_service_account" "push" {
  project      = var.project_id
  account_id   = "${var.name_prefix}-push"
  display_name = "bqcdc Pub/Sub push invoker"
  description  = "Identity of the OIDC tokens Pub/Sub attaches to push requests to the ingest function."
}

resource "google_service_account" "scheduler" {
  project      = var.project_id
  account_id   = "${var.name_prefix}-scheduler"
  display_name = "bqcdc compaction scheduler"
  description  = "Identity of the OIDC tokens Cloud Scheduler attaches to calls of the compact function."
}

# --- BigQuery ---------------------------------------------------------------

# Ingest appends to changelogs and to _bqcdc_dead_letters (Storage Write
# API: bigquery.tables.updateData), reads their metadata (tables.get) and
# adds columns and labels to changelogs when a source schema gains fields
# (tables.update). Nothing more: no tables.getData (the state tables and the
# dead letters hold row values), no tables.delete or create, no jobs.
resource "google_project_iam_custom_role" "ingest_table_writer" {
  project     = var.project_id
  role_id     = "${replace(var.name_prefix, "-", "_")}_ingest_table_writer"
  title       = "bqcdc ingest table writer"
  description = "Append to and evolve bqcdc changelog tables and append dead letters; granted only on those tables."
  permissions = ["bigquery.tables.get", "bigquery.tables.update", "bigquery.tables.updateData"]
}

# The changelogs and the dead-letter table are created later, by `bqcdc
# apply` (a table IAM grant needs the table to exist), so the grant is made
# on the dataset with a condition that limits it to those tables: names
# ending in _changelog (catalog.TableName), _bqcdc_dead_letters and the
# append ledger _bqcdc_appends (catalog.AppendsTable). State
# tables, views and compaction reports stay out of ingest's reach; views
# and state tables follow an evolved changelog at the next compaction.
resource "google_bigquery_dataset_iam_member" "ingest_writes_changelogs" {
  project    = var.project_id
  dataset_id = module.dataset.dataset_id
  role       = google_project_iam_custom_role.ingest_table_writer.name
  member     = "serviceAccount:${google_service_account.ingest.email}"

  condition {
    title       = "bqcdc changelogs, dead letters and append ledger"
    description = "Only the tables ingest writes: <source>_changelog, _bqcdc_dead_letters and _bqcdc_appends."
    expression  = "resource.name.startsWith(\"projects/${var.project_id}/datasets/${module.dataset.dataset_id}/tables/\") && (resource.name.endsWith(\"_changelog\") || resource.name.endsWith(\"/tables/_bqcdc_dead_letters\") || resource.name.endsWith(\"/tables/_bqcdc_appends\"))"
  }
}

resource "google_bigquery_dataset_iam_member" "compact_data_editor" {
  project    = var.project_id
  dataset_id = module.dataset.dataset_id
  role       = "roles/bigquery.dataEditor"
  member     = "serviceAccount:${google_service_account.compact.email}"
}

# Snapshot flows (AUTO CDC FROM SNAPSHOT) read the user's tables of
# snapshots: read access on each of those tables only, never their dataset.
resource "google_bigquery_table_iam_member" "compact_reads_snapshots" {
  for_each   = var.snapshot_tables
  project    = var.project_id
  dataset_id = split(".", each.value)[0]
  table_id   = split(".", each.value)[1]
  role       = "roles/bigquery.dataViewer"
  member     = "serviceAccount:${google_service_account.compact.email}"
}

# Query jobs are created in the project: bigquery.jobs.create exists only at
# project level.
resource "google_project_iam_member" "compact_job_user" {
  project = var.project_id
  role    = "roles/bigquery.jobUser"
  member  = "serviceAccount:${google_service_account.compact.email}"
}

# The dead-letter BigQuery subscriptions write as the Pub/Sub service agent.
resource "google_bigquery_table_iam_member" "pubsub_writes_dead_letters" {
  project    = var.project_id
  dataset_id = google_bigquery_table.dead_letters.dataset_id
  table_id   = google_bigquery_table.dead_letters.table_id
  role       = "roles/bigquery.dataEditor"
  member     = local.pubsub_service_agent_member
}

# --- Pub/Sub schemas: only those the topics use ------------------------------

# Fetching a schema revision needs pubsub.schemas.get on the schema; a grant
# on each schema listed (roles/pubsub.viewer on a schema covers that schema
# alone) instead of the project, where the role would read every topic's
# and subscription's metadata.
resource "google_pubsub_schema_iam_member" "ingest_reads_pubsub_schemas" {
  for_each = var.pubsub_schemas
  project  = var.project_id
  schema   = each.value
  role     = "roles/pubsub.viewer"
  member   = "serviceAccount:${google_service_account.ingest.email}"
}

# --- Secret Manager: only the registry secrets and the replay key, only for ingest

# One grant per secret of local.ingest_secrets (main.tf): the registry URL,
# user name and password, and the replay key. The replay key verifies that a
# message claiming to replay a dead letter was signed by `bqcdc replay`; only
# ingest verifies, so only ingest reads it (whoever runs replay reads it with
# their own access).
resource "google_secret_manager_secret_iam_member" "ingest_reads_secrets" {
  for_each  = local.ingest_secrets
  project   = var.project_id
  secret_id = each.value.secret
  role      = "roles/secretmanager.secretAccessor"
  member    = "serviceAccount:${google_service_account.ingest.email}"
}

# The grants were one resource per secret before.
moved {
  from = google_secret_manager_secret_iam_member.ingest_registry_url
  to   = google_secret_manager_secret_iam_member.ingest_reads_secrets["BQCDC_REGISTRY_URL"]
}

moved {
  from = google_secret_manager_secret_iam_member.ingest_registry_username
  to   = google_secret_manager_secret_iam_member.ingest_reads_secrets["BQCDC_REGISTRY_USERNAME"]
}

moved {
  from = google_secret_manager_secret_iam_member.ingest_registry_password
  to   = google_secret_manager_secret_iam_member.ingest_reads_secrets["BQCDC_REGISTRY_PASSWORD"]
}

moved {
  from = google_secret_manager_secret_iam_member.ingest_replay_key
  to   = google_secret_manager_secret_iam_member.ingest_reads_secrets["BQCDC_REPLAY_KEY"]
}

# --- Invocation: run.invoker on one service each -----------------------------

resource "google_cloud_run_v2_service_iam_member" "push_invokes_ingest" {
  project  = var.project_id
  location = var.region
  name     = module.function["ingest"].service_name
  role     = "roles/run.invoker"
  member   = "serviceAccount:${google_service_account.push.email}"
}

resource "google_cloud_run_v2_service_iam_member" "scheduler_invokes_compact" {
  project  = var.project_id
  location = var.region
  name     = module.function["compact"].service_name
  role     = "roles/run.invoker"
  member   = "serviceAccount:${google_service_account.scheduler.email}"
}

# Pub/Sub mints the push OIDC tokens as the push account. Projects created
# before April 2021 need this grant explicitly; it is scoped to that one
# account rather than the project.
resource "google_service_account_iam_member" "pubsub_mints_push_tokens" {
  service_account_id = google_service_account.push.name
  role               = "roles/iam.serviceAccountTokenCreator"
  member             = local.pubsub_service_agent_member
}
