terraform {
  required_version = ">= 1.5.0"

  required_providers {
    google = {
      source  = "hashicorp/google"
      version = ">= 6.0, < 8.0"
    }
    archive = {
      source  = "hashicorp/archive"
      version = ">= 2.4, < 3.0"
    }
  }

  # State is local by default. scripts/deploy.sh --state-bucket and
  # cloudbuild.yaml add backend_override.tf (backend "gcs") for shared state.
}
