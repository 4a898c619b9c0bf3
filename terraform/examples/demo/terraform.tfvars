# Demo: the two tables of Debezium's MySQL tutorial ("inventory" database,
# server name dbserver1). project_id and region come from the command line
# (scripts/deploy.sh, cloudbuild.yaml); dataset_id and location default to
# bqcdc_demo / US and are overridden there too.

# Secret ids, not values: create the secrets first (terraform/README.md).
registry_url_secret_id      = "bqcdc-registry-url"
registry_username_secret_id = "bqcdc-registry-username"
registry_password_secret_id = "bqcdc-registry-password"
replay_key_secret_id        = "bqcdc-replay-key"

# One entry per FROM STREAM(`...`) source in sql/flows (terraform_test.go
# checks that the two lists match).
sources = {
  "dbserver1.inventory.customers" = {}
  "dbserver1.inventory.orders" = {
    max_delivery_attempts = 20
  }
}
