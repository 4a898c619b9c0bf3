# Demo deployment of bqcdc: the two Debezium topics of the MySQL "inventory"
# tutorial database (sql/flows/customers.sql and sql/flows/orders.sql).
#
#   terraform init
#   terraform apply -var project_id=my-project -var region=europe-west1
#   go run ./cmd/bqcdc apply --project my-project --dataset bqcdc_demo ...
#
# scripts/deploy.sh does all three (see terraform/README.md).

provider "google" {
  project = var.project_id
  region  = var.region
}

module "bqcdc" {
  source = "../.."

  project_id = var.project_id
  region     = var.region
  location   = var.location
  dataset_id = var.dataset_id
  sources    = var.sources

  registry_url_secret_id      = var.registry_url_secret_id
  registry_username_secret_id = var.registry_username_secret_id
  registry_password_secret_id = var.registry_password_secret_id
  replay_key_secret_id        = var.replay_key_secret_id

  dead_letter_retention_days = var.dead_letter_retention_days

  changelog_retention_days   = var.changelog_retention_days
  delete_contents_on_destroy = var.delete_contents_on_destroy
  deletion_protection        = var.deletion_protection
}
