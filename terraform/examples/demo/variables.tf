variable "project_id" {
  type        = string
  description = "Project to deploy the demo into."
}

variable "region" {
  type        = string
  description = "Region of the functions and the scheduler job."
}

variable "location" {
  type        = string
  description = "BigQuery location of the dataset."
  default     = "US"
}

variable "dataset_id" {
  type        = string
  description = "BigQuery dataset of the demo."
  default     = "bqcdc_demo"
}

# Passed on whole: the root module's variable of the same name holds the
# type (the per-source settings and their defaults) and the validations.
variable "sources" {
  type        = any
  description = "Debezium topics to ingest, keyed by topic name, with the settings of each (see the root module's variable of the same name, which types and validates them)."
}

variable "registry_url_secret_id" {
  type        = string
  description = "Secret Manager secret id (not value) holding the Schema Registry URL."
}

variable "registry_username_secret_id" {
  type        = string
  description = "Secret Manager secret id (not value) holding the Schema Registry user name."
}

variable "registry_password_secret_id" {
  type        = string
  description = "Secret Manager secret id (not value) holding the Schema Registry password."
}

variable "replay_key_secret_id" {
  type        = string
  description = "Secret Manager secret id (not value) holding the replay key (BQCDC_REPLAY_KEY)."
}

variable "dead_letter_retention_days" {
  type        = number
  description = "Days dead letters are kept (null = forever)."
  default     = 30
}

variable "changelog_retention_days" {
  type        = number
  description = "Days compacted changelog partitions are kept (0 = forever)."
  default     = 7
}

variable "delete_contents_on_destroy" {
  type        = bool
  description = "Let `terraform destroy` delete the dataset with the tables `bqcdc apply` created (scripts/teardown.sh --delete-data sets it)."
  default     = false
}

variable "deletion_protection" {
  type        = bool
  description = "Protect the pubsub_dead_letters table from destroy (scripts/teardown.sh --delete-data clears it)."
  default     = true
}
