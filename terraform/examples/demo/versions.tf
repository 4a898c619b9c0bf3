# Terraform and provider versions are pinned by the bqcdc module it calls
# (terraform/versions.tf); the demo only names the provider it configures.
terraform {
  required_providers {
    google = {
      source = "hashicorp/google"
    }
  }

  # State is local by default. scripts/deploy.sh --state-bucket and
  # cloudbuild.yaml add backend_override.tf (backend "gcs") for shared state.
}
