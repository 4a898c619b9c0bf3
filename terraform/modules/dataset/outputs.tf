output "dataset_id" {
  description = "Id of the dataset (without project)."
  value       = google_bigquery_dataset.main.dataset_id
}

output "id" {
  description = "Full resource id of the dataset (projects/PROJECT/datasets/DATASET)."
  value       = google_bigquery_dataset.main.id
}

output "location" {
  description = "BigQuery location of the dataset, as passed to the functions in BQCDC_LOCATION."
  value       = google_bigquery_dataset.main.location
}
