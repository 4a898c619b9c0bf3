variable "project_id" {
  type        = string
  description = "Project of the function."
}

variable "region" {
  type        = string
  description = "Region of the function and its Cloud Run service, e.g. europe-west1."
}

variable "name" {
  type        = string
  description = "Function name (also the name of its Cloud Run service): lowercase letters, digits and hyphens, starting with a letter, at most 63 characters."

  validation {
    condition     = can(regex("^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$", var.name))
    error_message = "name must be lowercase letters, digits and hyphens, start with a letter, end with a letter or digit and be at most 63 characters."
  }
}

variable "description" {
  type        = string
  description = "Description shown in the console."
  default     = ""
}

variable "labels" {
  type        = map(string)
  description = "Labels applied to the function."
  default     = {}
}

variable "entry_point" {
  type        = string
  description = "Name under which the Go code registers the function (functions.HTTP), e.g. Ingest or Compact."

  validation {
    condition     = can(regex("^[A-Z][A-Za-z0-9]*$", var.entry_point))
    error_message = "entry_point must be an exported Go identifier such as Ingest."
  }
}

variable "runtime" {
  type        = string
  description = "Cloud Run functions runtime id. go125 or newer: the module needs Go 1.25+ language features."

  validation {
    condition     = can(regex("^go1[0-9]{2}$", var.runtime)) && try(tonumber(substr(var.runtime, 2, -1)) >= 125, false)
    error_message = "runtime must be a Go runtime id of go125 or newer."
  }
}

variable "source_bucket" {
  type        = string
  description = "Bucket holding the source archive."
}

variable "source_object" {
  type        = string
  description = "Object name of the source archive (zip of the repository root). It should contain the archive hash so that a change triggers a rebuild."
}

variable "service_account_email" {
  type        = string
  description = "Runtime service account of the function (a dedicated, least-privilege account)."
}

variable "build_service_account_email" {
  type        = string
  description = "Service account Cloud Build uses to build the function, or null for the project default. Set it where the default Compute Engine account is disabled; it needs roles/logging.logWriter, roles/artifactregistry.writer and read access to the source bucket."
  default     = null
}

variable "ingress_settings" {
  type        = string
  description = "Which networks may reach the function. ALLOW_INTERNAL_ONLY still admits Pub/Sub push and Cloud Scheduler from the same project."

  validation {
    condition     = contains(["ALLOW_ALL", "ALLOW_INTERNAL_ONLY", "ALLOW_INTERNAL_AND_GCLB"], var.ingress_settings)
    error_message = "ingress_settings must be ALLOW_ALL, ALLOW_INTERNAL_ONLY or ALLOW_INTERNAL_AND_GCLB."
  }
}

variable "resources" {
  type = object({
    memory                  = string
    cpu                     = string
    timeout_seconds         = number
    max_request_concurrency = number
    min_instance_count      = optional(number, 0)
    max_instance_count      = number
  })
  description = "Sizing of the Cloud Run service: memory (e.g. 512Mi), vCPUs (e.g. \"1\"), request timeout, requests served concurrently by one instance, and instance bounds. Concurrency above 1 needs at least 1 vCPU."

  validation {
    condition     = var.resources.max_request_concurrency >= 1 && var.resources.max_request_concurrency <= 1000
    error_message = "resources.max_request_concurrency must be between 1 and 1000."
  }

  validation {
    condition     = var.resources.max_request_concurrency == 1 || tonumber(var.resources.cpu) >= 1
    error_message = "resources.cpu must be at least 1 when resources.max_request_concurrency is above 1."
  }

  validation {
    condition     = var.resources.timeout_seconds >= 1 && var.resources.timeout_seconds <= 3600
    error_message = "resources.timeout_seconds must be between 1 and 3600."
  }

  validation {
    condition     = var.resources.min_instance_count >= 0 && var.resources.max_instance_count >= max(1, var.resources.min_instance_count)
    error_message = "resources.max_instance_count must be at least 1 and at least resources.min_instance_count."
  }
}

variable "environment_variables" {
  type        = map(string)
  description = "Plain environment variables. Never put credentials here: use secret_environment_variables."
  default     = {}
}

variable "secret_environment_variables" {
  type = map(object({
    secret  = string
    version = optional(string, "latest")
  }))
  description = "Environment variables read from Secret Manager, keyed by variable name: the secret id (in the function's project) and version. The runtime service account needs roles/secretmanager.secretAccessor on each secret before deployment. No default on purpose: callers state explicitly which secrets a function gets ({} for none)."

  validation {
    condition     = alltrue([for k in keys(var.secret_environment_variables) : can(regex("^[A-Z_][A-Z0-9_]*$", k))])
    error_message = "secret_environment_variables keys must be environment variable names (A-Z, 0-9, _)."
  }
}
