variable "project_id" {
  type        = string
  description = "Project of the job."
}

variable "region" {
  type        = string
  description = "Region of the job, e.g. europe-west1 (usually the target's region)."
}

variable "name" {
  type        = string
  description = "Job name: letters, digits, hyphens and underscores, at most 500 characters."

  validation {
    condition     = can(regex("^[A-Za-z0-9_-]{1,500}$", var.name))
    error_message = "name may contain only letters, digits, hyphens and underscores."
  }
}

variable "description" {
  type        = string
  description = "Description shown in the console."
  default     = ""
}

variable "schedule" {
  type        = string
  description = "Cron schedule (unix-cron format) of the calls."

  validation {
    condition     = length(split(" ", trimspace(var.schedule))) == 5
    error_message = "schedule must be a five-field unix-cron expression such as \"*/10 * * * *\"."
  }
}

variable "time_zone" {
  type        = string
  description = "IANA time zone the schedule is read in."
}

variable "paused" {
  type        = bool
  description = "Create the job paused (no calls until resumed)."
  default     = false
}

variable "target_uri" {
  type        = string
  description = "HTTPS URL called by the job; it is also the OIDC token audience, which Cloud Run checks."

  validation {
    condition     = startswith(var.target_uri, "https://")
    error_message = "target_uri must be an https:// URL."
  }
}

variable "audience" {
  type        = string
  description = "OIDC token audience, which Cloud Run checks against its service URL: target_uri without a query string."

  validation {
    condition     = startswith(var.audience, "https://") && !strcontains(var.audience, "?")
    error_message = "audience must be the service's https:// URL, without a query string."
  }
}

variable "service_account_email" {
  type        = string
  description = "Service account whose OIDC token authenticates the call; it needs roles/run.invoker on the target service only."
}

variable "attempt_deadline_seconds" {
  type        = number
  description = "Seconds Scheduler waits for a response before it marks the attempt failed (15-1800 for HTTP targets)."

  validation {
    condition     = var.attempt_deadline_seconds >= 15 && var.attempt_deadline_seconds <= 1800
    error_message = "attempt_deadline_seconds must be between 15 and 1800."
  }
}

variable "retry_count" {
  type        = number
  description = "Retries of a failed attempt. 0 by default: the next scheduled run picks up where a failed one stopped."
  default     = 0

  validation {
    condition     = var.retry_count >= 0 && var.retry_count <= 5
    error_message = "retry_count must be between 0 and 5."
  }
}
