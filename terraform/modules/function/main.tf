# One Cloud Run function (2nd gen) built by the Go buildpack from the shared
# source archive. Every function of bqcdc is deployed from the same archive
# (the repository root, whose package imports all function packages so their
# init() registrations run); entry_point picks the registered target.
resource "google_cloudfunctions2_function" "main" {
  project     = var.project_id
  location    = var.region
  name        = var.name
  description = var.description
  labels      = var.labels

  build_config {
    runtime     = var.runtime
    entry_point = var.entry_point
    # null: the project's default Cloud Build service account.
    service_account = var.build_service_account_email == null ? null : "projects/${var.project_id}/serviceAccounts/${var.build_service_account_email}"

    source {
      storage_source {
        bucket = var.source_bucket
        # The object name contains the archive hash: a code change is a new
        # object, hence a new build and revision.
        object = var.source_object
      }
    }
  }

  service_config {
    available_memory                 = var.resources.memory
    available_cpu                    = var.resources.cpu
    timeout_seconds                  = var.resources.timeout_seconds
    max_instance_request_concurrency = var.resources.max_request_concurrency
    min_instance_count               = var.resources.min_instance_count
    max_instance_count               = var.resources.max_instance_count
    ingress_settings                 = var.ingress_settings
    all_traffic_on_latest_revision   = true
    service_account_email            = var.service_account_email

    # The platform adds LOG_EXECUTION_ID itself; declaring it avoids a
    # permanent diff.
    environment_variables = merge({ LOG_EXECUTION_ID = "true" }, var.environment_variables)

    dynamic "secret_environment_variables" {
      for_each = var.secret_environment_variables

      content {
        key        = secret_environment_variables.key
        project_id = var.project_id
        secret     = secret_environment_variables.value.secret
        version    = secret_environment_variables.value.version
      }
    }
  }

  lifecycle {
    precondition {
      condition     = length(setintersection(keys(var.environment_variables), keys(var.secret_environment_variables))) == 0
      error_message = "A variable is set both as a plain and as a secret environment variable; secrets must come only from Secret Manager."
    }
  }
}
