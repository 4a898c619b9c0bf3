# The one place Terraform and provider versions are pinned: the modules
# under modules/ and the configurations under examples/ name only the
# providers they use, and Terraform applies these constraints to all of them.
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
}
