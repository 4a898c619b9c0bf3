variable "project_id" {
  type        = string
  description = "Project that owns the dataset."
}

variable "dataset_id" {
  type        = string
  description = "Dataset id: letters, digits and underscores, at most 1024 characters (the root module's var.dataset_id validates it)."
}

variable "location" {
  type        = string
  description = "BigQuery location of the dataset (a multi-region such as US or EU, or a region such as europe-west1). It cannot be changed after creation."
}

variable "description" {
  type        = string
  description = "Human-readable description shown in the BigQuery console."
  default     = "bqcdc: Debezium change data capture (changelogs, state tables and views)."
}

variable "labels" {
  type        = map(string)
  description = "Labels applied to the dataset."
  default     = {}
}

variable "delete_contents_on_destroy" {
  type        = bool
  description = "Whether `terraform destroy` may delete the dataset while it still holds tables. The changelog, state and view tables are created by `bqcdc apply`, not by Terraform, so with false (the default) destroy refuses to remove a dataset that holds data."
  default     = false
}
