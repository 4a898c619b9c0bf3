# A Cloud Scheduler job that POSTs to an authenticated Cloud Run URL with an
# OIDC token of a dedicated invoker service account (the target only needs to
# grant that account roles/run.invoker).
resource "google_cloud_scheduler_job" "main" {
  project     = var.project_id
  region      = var.region
  name        = var.name
  description = var.description
  schedule    = var.schedule
  time_zone   = var.time_zone
  paused      = var.paused

  # How long Scheduler waits for the answer; keep it at the target's timeout.
  attempt_deadline = "${var.attempt_deadline_seconds}s"

  retry_config {
    retry_count = var.retry_count
  }

  http_target {
    uri         = var.target_uri
    http_method = "POST"

    oidc_token {
      service_account_email = var.service_account_email
      audience              = var.audience
    }
  }
}
