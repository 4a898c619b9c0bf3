output "name" {
  description = "Name of the job."
  value       = google_cloud_scheduler_job.main.name
}

output "id" {
  description = "Resource id of the job (projects/PROJECT/locations/REGION/jobs/NAME)."
  value       = google_cloud_scheduler_job.main.id
}
