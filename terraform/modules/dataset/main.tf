# The BigQuery dataset that holds every bqcdc table: the per-source
# changelogs, state tables, views and bookkeeping tables (all created by
# `bqcdc apply` and the compact function) and the Pub/Sub dead-letter table
# (created by the root module).
#
# Deliberately no default_partition_expiration_ms / default_table_expiration_ms:
# the compact function deletes changelog partitions itself, and only once they
# are folded into the state tables and older than the retention it was given. A
# blind expiration would keep dropping partitions if compaction stopped
# running, losing changes that were never folded.
resource "google_bigquery_dataset" "main" {
  project     = var.project_id
  dataset_id  = var.dataset_id
  location    = var.location
  description = var.description
  labels      = var.labels

  delete_contents_on_destroy = var.delete_contents_on_destroy
}
