#!/usr/bin/env bash
# Deploy bqcdc to Google Cloud: `terraform init` + `terraform apply` of a root
# configuration (terraform/examples/demo by default), then `bqcdc apply` to
# create or update the changelog tables and views in the dataset.
#
# Registry credentials for `bqcdc apply` are taken from BQCDC_REGISTRY_URL,
# BQCDC_REGISTRY_USERNAME and BQCDC_REGISTRY_PASSWORD when set, otherwise read
# from the Secret Manager secrets the Terraform configuration names. They are
# never printed.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: scripts/deploy.sh --project ID --region REGION --dataset DATASET --tfvars FILE [options]

Deploys bqcdc: terraform init/apply, then `go run ./cmd/bqcdc apply`.

Required (flag or environment variable):
  --project ID         Google Cloud project            (BQCDC_PROJECT)
  --region REGION      functions / scheduler region     (BQCDC_REGION)
  --dataset DATASET    BigQuery dataset                 (BQCDC_DATASET)
  --tfvars FILE        Terraform variables file, e.g. terraform/examples/demo/terraform.tfvars
                                                        (BQCDC_TFVARS)
Options:
  --location LOC       BigQuery location (default: US)  (BQCDC_LOCATION)
  --tf-dir DIR         Terraform root configuration (default: terraform/examples/demo)
  --state-bucket NAME  keep Terraform state in this GCS bucket (writes backend_override.tf)
                                                        (BQCDC_TF_STATE_BUCKET)
  --state-prefix PATH  object prefix of the state (default: bqcdc/<dataset>)
  --auto-approve       do not ask before terraform apply
  --skip-tables        stop after terraform apply (no `bqcdc apply`)
  --dry-run            print every command instead of running it
  -h, --help           show this help
EOF
}

SCRIPT=deploy.sh
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
AUTO_APPROVE=0
SKIP_TABLES=0

# script_flag ARGS...: deploy.sh's own flags (see parse_args in lib.sh).
script_flag() {
  SHIFT=1
  case "$1" in
    --auto-approve) AUTO_APPROVE=1 ;;
    --skip-tables) SKIP_TABLES=1 ;;
    *) SHIFT=0 ;;
  esac
}

parse_args "$@"
check_target
need_tools terraform go

cd "$ROOT"
terraform_target
terraform_init

apply_args=(-input=false)
[[ $AUTO_APPROVE -eq 1 ]] && apply_args+=(-auto-approve)
step "terraform apply"
run "${TF[@]}" apply "${apply_args[@]}" "${TF_VARS[@]}"

if [[ $SKIP_TABLES -eq 1 ]]; then
  step "skipping bqcdc apply (--skip-tables)"
  exit 0
fi

registry_settings

# The dead-letter table's partition expiration (Terraform's
# dead_letter_retention_days; 0 keeps dead letters): bqcdc apply owns that
# table, Terraform only the setting.
step "bqcdc apply (changelog tables and views in $PROJECT:$DATASET)"
if [[ $DRY_RUN -eq 1 ]]; then
  run go run ./cmd/bqcdc apply --project "$PROJECT" --dataset "$DATASET" --location "$LOCATION" \
    --flows sql/flows --schemas schemas --registry-url '<BQCDC_REGISTRY_URL>' \
    --dead-letter-retention-days '<terraform output dead_letter_retention_days>'
else
  retention="$("${TF[@]}" output -raw dead_letter_retention_days)"
  go run ./cmd/bqcdc apply --project "$PROJECT" --dataset "$DATASET" --location "$LOCATION" \
    --flows sql/flows --schemas schemas --registry-url "$BQCDC_REGISTRY_URL" \
    --dead-letter-retention-days "$retention"
fi
step "done"
