output "name" {
  description = "Name of the function."
  value       = google_cloudfunctions2_function.main.name
}

output "id" {
  description = "Resource id of the function (projects/PROJECT/locations/REGION/functions/NAME)."
  value       = google_cloudfunctions2_function.main.id
}

output "uri" {
  description = "HTTPS URL of the function's Cloud Run service: the push / scheduler target and the OIDC audience."
  value       = google_cloudfunctions2_function.main.service_config[0].uri
}

output "service_name" {
  description = "Name of the Cloud Run service that runs the function, for roles/run.invoker bindings."
  value       = reverse(split("/", google_cloudfunctions2_function.main.service_config[0].service))[0]
}

output "service_account_email" {
  description = "Runtime service account of the function."
  value       = google_cloudfunctions2_function.main.service_config[0].service_account_email
}
