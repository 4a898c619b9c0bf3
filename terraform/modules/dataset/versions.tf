# Terraform and provider versions are pinned once, by the root module
# (terraform/versions.tf); a module only names the providers it uses.
terraform {
  required_providers {
    google = {
      source = "hashicorp/google"
    }
  }
}
